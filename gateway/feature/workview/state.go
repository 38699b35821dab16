package workview

import (
	"fmt"
	"strings"
	"time"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// Bounds of the status message: it must stay one short platform message.
const (
	workActionsShown = 5    // the last few actions; older ones are counted
	workOutputLines  = 3    // full mode: command output tail, lines...
	workOutputChars  = 300  // ...and characters
	workReasonChars  = 300  // full mode: the latest reasoning summary
	workTextChars    = 3000 // the whole message, under Telegram's 4096
)

// workState is the turn's work so far.
type workState struct {
	plan      []chat.WorkStep
	actions   []chat.WorkAction
	index     map[string]int  // action id → position
	files     map[string]bool // distinct paths changed
	reasoning string
	retry     string
	model     string         // a reroute's line (ext.RerouteLine)
	final     *chat.WorkView // set by Stop
}

// apply reports whether p changes what the view shows.
func (s *workState) apply(p codex.Progress, full bool) bool {
	switch p.Kind {
	case codex.ProgressPlan:
		s.plan = s.plan[:0]
		for _, st := range p.Plan {
			s.plan = append(s.plan, chat.WorkStep{Step: st.Step, Status: st.Status})
		}
		s.retry = ""
		return true
	case codex.ProgressAction:
		if p.Action == nil {
			return false
		}
		s.putAction(p.Action, full)
		s.retry = ""
		return true
	case codex.ProgressReasoning:
		if !full {
			return false
		}
		s.reasoning = clip(p.Text, workReasonChars)
		return true
	case codex.ProgressRetry:
		s.retry = p.Text
		return true
	case codex.ProgressReroute:
		if p.Reroute == nil {
			return false
		}
		s.model = ext.RerouteLine(*p.Reroute)
		return true
	}
	return false
}

func (s *workState) putAction(a *codex.Action, full bool) {
	wa := workActionOf(a, full)
	for _, f := range a.Files {
		s.files[f.Path] = true
	}
	if i, ok := s.index[a.ID]; ok && a.ID != "" {
		s.actions[i] = wa
		return
	}
	s.index[a.ID] = len(s.actions)
	s.actions = append(s.actions, wa)
}

func workActionOf(a *codex.Action, full bool) chat.WorkAction {
	wa := chat.WorkAction{ID: a.ID, Status: a.Status, Error: a.Error}
	switch a.Type {
	case codex.ActionCommand:
		wa.Kind, wa.Title, wa.ExitCode = chat.WorkCommand, a.Command, a.ExitCode
		wa.DurationMs = a.Duration.Milliseconds()
		if full {
			wa.Output = outputTail(a.Output)
		}
	case codex.ActionFileEdit:
		wa.Kind = chat.WorkFileEdit
		paths := make([]string, 0, len(a.Files))
		for _, f := range a.Files {
			paths = append(paths, shortPath(f.Path))
			wa.Added += f.Added
			wa.Removed += f.Removed
		}
		wa.Title = strings.Join(paths, ", ")
	case codex.ActionWebSearch:
		wa.Kind, wa.Title = chat.WorkWebSearch, a.Query
	case codex.ActionMCPTool:
		wa.Kind, wa.Title = chat.WorkMCPTool, a.Server+"/"+a.Tool
	}
	if wa.Status == "" {
		wa.Status = codex.StepInProgress
		if a.Done {
			wa.Status = codex.StepCompleted
		}
	}
	return wa
}

// view is the state as a WorkView; the caller holds mu.
func (s *workState) view(elapsed time.Duration) chat.WorkView {
	v := chat.WorkView{Plan: append([]chat.WorkStep(nil), s.plan...), Reasoning: s.reasoning, Retry: s.retry, Model: s.model,
		Files: len(s.files), ElapsedMs: elapsed.Milliseconds()}
	for _, a := range s.actions {
		switch a.Kind {
		case chat.WorkCommand:
			v.Commands++
		case chat.WorkWebSearch:
			v.Searches++
		case chat.WorkMCPTool:
			v.Tools++
		}
	}
	v.Earlier = max(0, len(s.actions)-workActionsShown)
	v.Actions = append(v.Actions, s.actions[v.Earlier:]...)
	return v
}

// summaryLine is the one line a finished turn's status message keeps:
// "3 commands, 2 files changed, 41 s".
func summaryLine(v chat.WorkView) string {
	var parts []string
	add := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	add(v.Commands, "command", "commands")
	add(v.Files, "file changed", "files changed")
	add(v.Searches, "web search", "web searches")
	add(v.Tools, "tool call", "tool calls")
	if len(parts) == 0 && len(v.Plan) > 0 {
		done := 0
		for _, s := range v.Plan {
			if s.Status == codex.StepCompleted {
				done++
			}
		}
		parts = append(parts, fmt.Sprintf("plan %d/%d done", done, len(v.Plan)))
	}
	parts = append(parts, workDuration(time.Duration(v.ElapsedMs)*time.Millisecond))
	return strings.Join(parts, ", ")
}

// workDuration prints "41 s" or "2 min 5 s".
func workDuration(d time.Duration) string {
	s := int(d.Round(time.Second) / time.Second)
	if s < 60 {
		return fmt.Sprintf("%d s", s)
	}
	return fmt.Sprintf("%d min %d s", s/60, s%60)
}

// renderWork is the status message's text: the plan checklist first, then
// the last few actions; "" when there is nothing to show.
func renderWork(v chat.WorkView, full bool) string {
	var b strings.Builder
	for _, s := range v.Plan {
		fmt.Fprintf(&b, "%s %s\n", stepMark(s.Status), s.Step)
	}
	if len(v.Plan) > 0 && (len(v.Actions) > 0 || v.Retry != "" || v.Reasoning != "") {
		b.WriteByte('\n')
	}
	if v.Earlier > 0 {
		fmt.Fprintf(&b, "… %d earlier\n", v.Earlier)
	}
	for _, a := range v.Actions {
		b.WriteString(actionLine(a))
		b.WriteByte('\n')
		if full && a.Output != "" {
			for _, l := range strings.Split(a.Output, "\n") {
				b.WriteString("  │ " + l + "\n")
			}
		}
	}
	if full && v.Reasoning != "" {
		b.WriteString("💭 " + v.Reasoning + "\n")
	}
	if v.Retry != "" {
		b.WriteString("⏳ " + v.Retry + "\n")
	}
	if v.Model != "" {
		b.WriteString(modelMark + v.Model + "\n")
	}
	return clip(strings.TrimRight(b.String(), "\n"), workTextChars)
}

// modelMark starts the line of a turn answered by another model.
const modelMark = "↪ "

// finalText is what a finished turn's status message keeps: the summary
// line and, when the turn was rerouted, which model answered.
func finalText(v chat.WorkView) string {
	if v.Model == "" {
		return v.Summary
	}
	return v.Summary + "\n" + modelMark + v.Model
}

func stepMark(status string) string {
	switch status {
	case codex.StepCompleted:
		return "✅"
	case codex.StepInProgress:
		return "▶️"
	}
	return "⬜"
}

func actionLine(a chat.WorkAction) string {
	mark := "⏳"
	switch a.Status {
	case "completed":
		mark = "✓"
	case "failed", "declined":
		mark = "✗"
	}
	switch a.Kind {
	case chat.WorkCommand:
		line := mark + " $ " + clip(oneLine(a.Title), 120)
		switch {
		case a.Status == "declined":
			line += " (declined)"
		case a.ExitCode != nil:
			line += fmt.Sprintf(" → exit %d, %.1f s", *a.ExitCode, float64(a.DurationMs)/1000)
		}
		return line
	case chat.WorkFileEdit:
		return fmt.Sprintf("%s ✏️ %s (+%d −%d)", mark, clip(a.Title, 120), a.Added, a.Removed)
	case chat.WorkWebSearch:
		return mark + " 🔎 " + clip(oneLine(a.Title), 120)
	}
	line := mark + " 🔧 " + a.Title
	if a.Error != "" {
		line += ": " + clip(oneLine(a.Error), 120)
	}
	return line
}

// outputTail is the end of a command's output, bounded.
func outputTail(out string) string {
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) > workOutputLines {
		lines = lines[len(lines)-workOutputLines:]
	}
	tail := strings.Join(lines, "\n")
	if r := []rune(tail); len(r) > workOutputChars {
		tail = "…" + string(r[len(r)-workOutputChars:])
	}
	return strings.TrimSpace(tail)
}

func shortPath(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 && i < len(p)-1 {
		return p[i+1:]
	}
	return p
}

func oneLine(s string) string {
	s, _, cut := strings.Cut(strings.TrimSpace(s), "\n")
	if cut {
		s += " …"
	}
	return s
}

// clip bounds s to n runes.
func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
