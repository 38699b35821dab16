package chat

// WorkView is what a turn's status message shows, structured: the API lane
// sends it as the JSON of SSE "progress" events and in the answer. Counts
// cover the whole turn; Actions only the last few.
type WorkView struct {
	Plan      []WorkStep   `json:"plan,omitempty"`
	Actions   []WorkAction `json:"actions,omitempty"`
	Earlier   int          `json:"earlier_actions,omitempty"` // actions before the ones shown
	Reasoning string       `json:"reasoning,omitempty"`       // full mode: the latest summary
	Retry     string       `json:"retry,omitempty"`           // codex reconnecting to its model
	Model     string       `json:"model,omitempty"`           // the turn answered by another model than asked for, and why
	Commands  int          `json:"commands"`
	Files     int          `json:"files_changed"`
	Searches  int          `json:"web_searches"`
	Tools     int          `json:"tool_calls"`
	ElapsedMs int64        `json:"elapsed_ms"`
	// Done and Summary are set when the turn ended: the status message
	// then collapses to Summary ("3 commands, 2 files changed, 41 s").
	Done    bool   `json:"done"`
	Summary string `json:"summary,omitempty"`
}

// WorkStep is one step of Codex's plan.
type WorkStep struct {
	Step   string `json:"step"`
	Status string `json:"status"` // pending | inProgress | completed
}

// Work action kinds.
const (
	WorkCommand   = "command"
	WorkFileEdit  = "file_change"
	WorkWebSearch = "web_search"
	WorkMCPTool   = "mcp_tool"
)

// WorkAction is one thing Codex did: a command, a file change, a web
// search or an MCP tool call.
type WorkAction struct {
	ID         string `json:"id"`
	Kind       string `json:"kind"`
	Title      string `json:"title"`  // the command, the paths, the query, server/tool
	Status     string `json:"status"` // inProgress | completed | failed | declined
	ExitCode   *int   `json:"exit_code,omitempty"`
	DurationMs int64  `json:"duration_ms,omitempty"`
	Added      int    `json:"added,omitempty"`
	Removed    int    `json:"removed,omitempty"`
	Error      string `json:"error,omitempty"`
	Output     string `json:"output,omitempty"` // full mode: the output's tail
}
