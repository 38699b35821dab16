package codex

import (
	"encoding/json"
	"strings"
	"time"
)

// ProgressKind says what a Progress event reports.
type ProgressKind string

// Progress kinds, from the app-server's notifications (docs/codex-app-server.md §3, §11).
const (
	ProgressPlan      ProgressKind = "plan"      // turn/plan/updated: the whole plan
	ProgressAction    ProgressKind = "action"    // item/started or item/completed of a tool item
	ProgressReasoning ProgressKind = "reasoning" // a completed reasoning item's summary
	ProgressRetry     ProgressKind = "retry"     // error with willRetry: codex reconnects to its model
	// ProgressReroute: model/rerouted, the turn is answered by another
	// model than the one asked for (Reroute).
	ProgressReroute ProgressKind = "reroute"
	// ProgressGuardian: guardianWarning, codex's guardian warns about
	// what the turn does (Text).
	ProgressGuardian ProgressKind = "guardian"
)

// Action types: the ThreadItem types the work view shows.
const (
	ActionCommand   = "commandExecution"
	ActionFileEdit  = "fileChange"
	ActionWebSearch = "webSearch"
	ActionMCPTool   = "mcpToolCall"
)

// Plan step statuses (TurnPlanStepStatus).
const (
	StepPending    = "pending"
	StepInProgress = "inProgress"
	StepCompleted  = "completed"
)

// Progress is one thing codex reports while a turn works. Only the fields
// of its Kind are set.
type Progress struct {
	Kind ProgressKind
	// Plan is the full plan after the update (ProgressPlan); Explanation
	// is codex's optional note about it.
	Plan        []PlanStep
	Explanation string
	// Action is the tool item that started or completed (ProgressAction).
	Action *Action
	// Text is the reasoning summary (ProgressReasoning), the retry
	// notice, e.g. "Reconnecting... 2/5" (ProgressRetry), or the
	// guardian's warning (ProgressGuardian).
	Text string
	// Reroute is which model answers instead of which (ProgressReroute).
	Reroute *Reroute
}

// Reroute is a turn answered by another model than the one asked for
// (model/rerouted): codex saw the model server answer as To.
type Reroute struct {
	From, To string
	// Reason is codex's ModelRerouteReason, e.g. "highRiskCyberActivity".
	Reason string
}

// PlanStep is one step of the turn's plan.
type PlanStep struct {
	Step   string
	Status string // StepPending | StepInProgress | StepCompleted
}

// Action is a tool item of the turn: a command, a file change, a web search
// or an MCP tool call. Started and completed events carry the same ID.
type Action struct {
	ID, Type string
	// Status is the item's: inProgress, completed, failed or declined.
	Status string
	Done   bool // from item/completed

	// Command: the command line as the model asked for it (without codex's
	// shell wrapper), its exit code (nil until it ended), its run time and
	// its combined output (set on completion).
	Command  string
	ExitCode *int
	Duration time.Duration
	Output   string

	Files []FileChange // fileChange

	Query string // webSearch

	Server, Tool string // mcpToolCall
	Error        string // mcpToolCall's error message
}

// FileChange is one file of a fileChange item. Added and Removed count the
// lines of its diff (for an added file codex sends the content: every line
// counts as added).
type FileChange struct {
	Path           string
	Kind           string // add | delete | update
	Added, Removed int
}

// Wire shapes of the progress notifications (generate-json-schema, 0.169.0).
type wirePlanStep struct {
	Step   string `json:"step"`
	Status string `json:"status"`
}

type wireAction struct {
	Type           string `json:"type"`
	ID             string `json:"id"`
	Status         string `json:"status"`
	Command        string `json:"command"`
	CommandActions []struct {
		Command string `json:"command"`
	} `json:"commandActions"`
	ExitCode         *int    `json:"exitCode"`
	DurationMs       *int64  `json:"durationMs"`
	AggregatedOutput *string `json:"aggregatedOutput"`
	Changes          []struct {
		Path string `json:"path"`
		Kind struct {
			Type string `json:"type"`
		} `json:"kind"`
		Diff string `json:"diff"`
	} `json:"changes"`
	Query  string `json:"query"`
	Action *struct {
		Query   *string  `json:"query"`
		Queries []string `json:"queries"`
		URL     *string  `json:"url"`
	} `json:"action"`
	Server string `json:"server"`
	Tool   string `json:"tool"`
	Error  *struct {
		Message string `json:"message"`
	} `json:"error"`
	Summary []string `json:"summary"` // reasoning
}

// progressOf decodes the progress a notification reports, if any.
func progressOf(method string, e *turnEvent) (Progress, bool) {
	switch method {
	case "turn/plan/updated":
		var steps []wirePlanStep
		if json.Unmarshal(e.Plan, &steps) != nil {
			return Progress{}, false
		}
		p := Progress{Kind: ProgressPlan, Explanation: e.Explanation}
		for _, s := range steps {
			p.Plan = append(p.Plan, PlanStep(s))
		}
		return p, true
	case "item/started", "item/completed":
		return itemProgress(e.Item, method == "item/completed")
	case "error":
		if !e.WillRetry || e.Error == nil {
			return Progress{}, false
		}
		return Progress{Kind: ProgressRetry, Text: e.Error.Message}, true
	case "model/rerouted":
		if e.ToModel == "" {
			return Progress{}, false
		}
		return Progress{Kind: ProgressReroute, Reroute: &Reroute{From: e.FromModel, To: e.ToModel, Reason: e.Reason}}, true
	case "guardianWarning":
		if strings.TrimSpace(e.Message) == "" {
			return Progress{}, false
		}
		return Progress{Kind: ProgressGuardian, Text: strings.TrimSpace(e.Message)}, true
	}
	return Progress{}, false
}

func itemProgress(raw json.RawMessage, done bool) (Progress, bool) {
	var w wireAction
	if len(raw) == 0 || json.Unmarshal(raw, &w) != nil {
		return Progress{}, false
	}
	if w.Type == "reasoning" {
		text := strings.TrimSpace(strings.Join(w.Summary, "\n"))
		if !done || text == "" {
			return Progress{}, false
		}
		return Progress{Kind: ProgressReasoning, Text: text}, true
	}
	a := &Action{ID: w.ID, Type: w.Type, Status: w.Status, Done: done}
	switch w.Type {
	case ActionCommand:
		a.Command = commandLine(w)
		a.ExitCode = w.ExitCode
		if w.DurationMs != nil {
			a.Duration = time.Duration(*w.DurationMs) * time.Millisecond
		}
		if w.AggregatedOutput != nil {
			a.Output = *w.AggregatedOutput
		}
	case ActionFileEdit:
		for _, c := range w.Changes {
			added, removed := diffCounts(c.Kind.Type, c.Diff)
			a.Files = append(a.Files, FileChange{Path: c.Path, Kind: c.Kind.Type, Added: added, Removed: removed})
		}
	case ActionWebSearch:
		a.Query = searchQuery(w)
	case ActionMCPTool:
		a.Server, a.Tool = w.Server, w.Tool
		if w.Error != nil {
			a.Error = w.Error.Message
		}
	default:
		return Progress{}, false
	}
	return Progress{Kind: ProgressAction, Action: a}, true
}

// commandLine is what the model asked to run: codex wraps it as
// `/bin/bash -lc '<cmd>'` in command, and gives it bare in commandActions
// when it parsed as one action.
func commandLine(w wireAction) string {
	if len(w.CommandActions) == 1 && w.CommandActions[0].Command != "" {
		return w.CommandActions[0].Command
	}
	return unwrapShell(w.Command)
}

func unwrapShell(cmd string) string {
	for _, prefix := range []string{"/bin/bash -lc ", "/bin/bash -c ", "bash -lc ", "bash -c ", "/bin/sh -c ", "sh -c "} {
		rest, ok := strings.CutPrefix(cmd, prefix)
		if ok && len(rest) >= 2 && rest[0] == '\'' && rest[len(rest)-1] == '\'' {
			return strings.ReplaceAll(rest[1:len(rest)-1], `'\''`, `'`)
		}
	}
	return cmd
}

// diffCounts counts added and removed lines. codex sends a unified diff for
// an update but the file's content for an add or a delete.
func diffCounts(kind, diff string) (added, removed int) {
	lines := strings.Split(strings.TrimSuffix(diff, "\n"), "\n")
	if diff == "" {
		lines = nil
	}
	switch kind {
	case "add":
		return len(lines), 0
	case "delete":
		return 0, len(lines)
	}
	for _, l := range lines {
		switch {
		case strings.HasPrefix(l, "+++"), strings.HasPrefix(l, "---"):
		case strings.HasPrefix(l, "+"):
			added++
		case strings.HasPrefix(l, "-"):
			removed++
		}
	}
	return added, removed
}

func searchQuery(w wireAction) string {
	if w.Query != "" {
		return w.Query
	}
	if a := w.Action; a != nil {
		switch {
		case a.Query != nil && *a.Query != "":
			return *a.Query
		case len(a.Queries) > 0:
			return strings.Join(a.Queries, "; ")
		case a.URL != nil:
			return *a.URL
		}
	}
	return ""
}
