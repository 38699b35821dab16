// Package features is the list of the gateway's feature packages, each
// built from its settings. The daemon and the tests that run a whole
// gateway take the list from here; the core names no feature. Adding a
// feature is its package and its line in List.
package features

import (
	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/feature/account"
	"github.com/gatewayd/gatewayd/gateway/feature/approvals"
	"github.com/gatewayd/gatewayd/gateway/feature/btw"
	"github.com/gatewayd/gatewayd/gateway/feature/cmdbuttons"
	"github.com/gatewayd/gatewayd/gateway/feature/compact"
	"github.com/gatewayd/gatewayd/gateway/feature/confine"
	"github.com/gatewayd/gatewayd/gateway/feature/diff"
	"github.com/gatewayd/gatewayd/gateway/feature/diskquota"
	"github.com/gatewayd/gatewayd/gateway/feature/fork"
	"github.com/gatewayd/gatewayd/gateway/feature/goal"
	"github.com/gatewayd/gatewayd/gateway/feature/models"
	"github.com/gatewayd/gatewayd/gateway/feature/names"
	"github.com/gatewayd/gatewayd/gateway/feature/plan"
	"github.com/gatewayd/gatewayd/gateway/feature/projects"
	"github.com/gatewayd/gatewayd/gateway/feature/questions"
	"github.com/gatewayd/gatewayd/gateway/feature/reroute"
	"github.com/gatewayd/gatewayd/gateway/feature/review"
	"github.com/gatewayd/gatewayd/gateway/feature/roomtalk"
	"github.com/gatewayd/gatewayd/gateway/feature/rotate"
	"github.com/gatewayd/gatewayd/gateway/feature/schedules"
	"github.com/gatewayd/gatewayd/gateway/feature/senderlimit"
	"github.com/gatewayd/gatewayd/gateway/feature/sendfile"
	"github.com/gatewayd/gatewayd/gateway/feature/speaker"
	"github.com/gatewayd/gatewayd/gateway/feature/threads"
	"github.com/gatewayd/gatewayd/gateway/feature/title"
	"github.com/gatewayd/gatewayd/gateway/feature/toolbox"
	"github.com/gatewayd/gatewayd/gateway/feature/undo"
	"github.com/gatewayd/gatewayd/gateway/feature/usage"
	"github.com/gatewayd/gatewayd/gateway/feature/voice"
	"github.com/gatewayd/gatewayd/gateway/feature/workview"
)

// Settings are the features' configuration, as the config file gives it.
type Settings struct {
	Rotate       config.Rotate // lanes.rotate
	MaxPerMinute int           // lanes.max_per_minute
	// Budget is lanes.budget_tokens_per_day, its days beginning in
	// lanes.timezone (usage.BudgetOf).
	Budget usage.Budget
	// UsageTimers arms the usage feature's timers (a pause's reset, the
	// next day's start); nil is time.AfterFunc. Tests fire them by hand.
	UsageTimers usage.AfterFunc
	DiskQuota   int64        // lanes.disk_quota, in bytes
	Voice       voice.Config // voice.*
	// CodexHome is the app-server's CODEX_HOME, named in /handoff's
	// command ("": not named).
	CodexHome string
	// Projects are projects and worktrees.pool (the worktrees' directory
	// is the core's: gateway.Config.Worktrees, lanes.worktrees).
	Projects projects.Settings
	// Schedules is schedules.* and lanes.timezone (/at, /every).
	Schedules schedules.Config
	// Model and Effort are codex.model and codex.effort: the model and
	// reasoning effort of lanes that chose none ("": codex's own).
	Model, Effort string
	// CodexLogin is the codex command an operator runs to log in, named in
	// the reason a lane hears while codex has no account; "" is "codex".
	// The package's bundled codex is not on PATH, so the daemon names its
	// path.
	CodexLogin string
	// Verbose is the work view mode of lanes that chose none with
	// /verbose (lanes.verbose; "": config's default).
	Verbose string
	// Compact is when a lane's thread is compacted (lanes.compact_at).
	Compact compact.Config
	// GroupContext keeps what a shared room says between turns for its
	// next addressed one (lanes.group_context); ContextMessages bounds
	// how many lines a turn carries (lanes.context_messages; 0: config's
	// default).
	GroupContext    bool
	ContextMessages int
}

// Store is what the features use of the store: the union of their own
// narrow interfaces, each checked against *store.Store in its package.
type Store interface {
	rotate.Store
	senderlimit.Store
	btw.Store
	plan.Store
	undo.Store
	diff.Store
	fork.Store
	threads.Store
	projects.Store
	schedules.Store
	models.Store
	workview.Store
	usage.Store
	compact.Store
	roomtalk.Store
	toolbox.Store
	goal.Store
	names.Store
}

// Runtime is what the features use of codex: the union of their own
// narrow interfaces, each checked against *codex.Client in its package.
type Runtime interface {
	btw.Runtime
	undo.Runtime
	fork.Runtime
	threads.Runtime
	models.Runtime
	account.Runtime
	usage.Runtime
	compact.Runtime
	toolbox.Runtime
	goal.Runtime
	names.Runtime
}

// List builds every feature, in the order they register (the order of
// their commands after the core's, and of their /status lines).
func List(s Settings, st Store, cx Runtime) []ext.Feature {
	return []ext.Feature{
		// First: it chooses a turn's working directory, which the hooks
		// of the features after it see (confine grants the worktree's).
		projects.New(s.Projects, st),
		// Next: the turn's model is set before plan's input hook reads it.
		models.New(s.Model, s.Effort, st, cx),
		// Before diskquota: a codex that cannot answer refuses first.
		account.New(s.CodexLogin, cx),
		usage.New(st, cx, s.UsageTimers).WithBudget(s.Budget),
		compact.New(s.Compact, st, cx),
		schedules.New(s.Schedules, st),
		rotate.New(s.Rotate, st),
		senderlimit.New(s.MaxPerMinute, st),
		review.New(),
		btw.New(st, cx),
		plan.New(st),
		undo.New(st, cx),
		diff.New(st),
		fork.New(st, cx),
		threads.New(st, cx, s.CodexHome),
		toolbox.New(st, cx),
		goal.New(st, cx).WithDailyBudget(s.Budget.PerDay), // a goal codex keeps working on; relays the turns it runs on its own
		diskquota.New(s.DiskQuota),
		confine.New(), // codex.isolation is the core's (gateway.Config.Isolation): it places the lanes' directories
		voice.New(s.Voice),
		sendfile.New(), // the core's files store (gateway.Config.Files) keeps what it sends
		workview.New(s.Verbose, st),
		reroute.New(), // a turn answered by another model, or warned by codex's guardian, says so before its reply
		cmdbuttons.New(),
		// codex.approvals and the timeouts are the core's (gateway.Config): its
		// Approve and AskUser are where the daemon routes Codex's requests.
		approvals.New(), // after every feature that adds roots to a turn (confine): it checks grants against them
		questions.New(),
		// The text hooks, in this order: a message is framed with its
		// speaker, then the room's talk goes before the frame.
		speaker.New(),
		roomtalk.New(s.GroupContext, s.ContextMessages, st),
		title.New(),       // intake asks it before the text hooks frame the message
		names.New(st, cx), // a place renamed names its Codex thread, and back
	}
}
