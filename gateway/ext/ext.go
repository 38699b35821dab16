// Package ext is the gateway's extension API: what a feature sees of the
// core. A feature is a package under gateway/feature that imports this one
// and package chat, never the core: it registers, once, the commands,
// buttons and hooks it adds, and reaches lanes, turns and the outbox only
// through the interfaces here. The compiler then keeps a feature out of
// the core's insides, and removing one is deleting its package and its line
// in the daemon's list of features. The shape is tailscale's ipn/ipnext.
package ext

import (
	"context"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// A Feature adds to the gateway what its package is about.
type Feature interface {
	// Name is the feature's short name, for logs and errors.
	Name() string
	// Register adds the feature's commands, buttons and hooks to h. It
	// runs once, while the gateway is built, before any message arrives;
	// h stays valid for the gateway's life.
	Register(h Host) error
}

// Host is the core as a feature sees it: where it registers, and the
// services it may use from then on.
type Host interface {
	// WorkHooks are the hooks around a lane's queued work and the
	// services they use.
	WorkHooks

	// Command adds a command: its name, its help and menu entry and its
	// handler, in one value.
	Command(c Command)
	// Callback routes button presses whose id starts with prefix to fn.
	Callback(prefix string, fn func(ctx context.Context, in chat.Inbound))

	// OnAdmit runs in intake before anything of a message is stored; fn
	// reports true when it refused the message, with the error that is
	// Deliver's answer (nil: the update is acknowledged, the sender was
	// told).
	OnAdmit(fn func(ctx context.Context, in chat.Inbound) (refused bool, err error))
	// OnSession runs once a turn's lane row is read, before its working
	// directory is chosen: it may start a new transcript session
	// (Turn.SetRow).
	OnSession(fn func(ctx context.Context, t Turn))
	// OnStatus adds lines to /status for a lane whose row could be read.
	OnStatus(fn func(ctx context.Context, sl store.Lane, b *strings.Builder))

	// Notify sends a gateway notice to the lane at addr through the
	// durable outbox, as a reply to the platform message replyTo ("" for
	// none).
	Notify(ctx context.Context, addr chat.Address, replyTo, text string)
	// IsAdmin reports whether the sender of in administers its place:
	// the platform says so, or the config lists them (codex.admins).
	IsAdmin(in chat.Inbound) bool

	// Context outlives every request: work a feature starts on its own
	// (a notice after the adapter's request ended) runs under it, and it
	// ends when the gateway has stopped.
	Context() context.Context
	// Logger is the gateway's logger, named for the feature.
	Logger() *zap.Logger
	// Now is the gateway's clock.
	Now() time.Time
}

// Command is one gateway command as /help, the platforms' menus and the
// parser know it, with its handler.
type Command struct {
	Name        string // lower case, without the slash
	Args        string // argument synopsis for /help ("" when none)
	Description string // one line, for /help and the menus
	// Menu: offered in the platforms' command menus. Commands that need
	// an argument to be useful are typed instead.
	Menu bool
	// Run runs the command. It reports whether the command is answered
	// and its inbound row can be closed as done; false when it queued
	// work that closes the row, or closed the row itself.
	Run func(ctx context.Context, c Call) (done bool)
}

// Call is one command as the lane received it.
type Call struct {
	Lane      Lane
	Name      string // lower case, without the slash
	Args      string
	InboundID int64
	MsgID     string // the platform message id of the command
	Sender    string // platform user id of who typed it ("" after a restart)
	// SenderName is the name shown for them ("" when not known).
	SenderName string
}

// Lane is one conversation as a feature sees it.
type Lane interface {
	// Running is the lane's turn while codex runs it, for a tool it
	// calls; false when none runs.
	Running() (RunningTurn, bool)

	Key() string // the session key
	Address() chat.Address
	// RetireThread marks the lane's loaded thread as belonging to an
	// ended session: it is released before the lane's next thread loads.
	RetireThread()
}

// Turn is a turn being prepared or run.
type Turn interface {
	// Dir is the turn's working directory, as the core chose it (a
	// project's, its worktree, or the lane's own).
	Dir() string
	// AddFiles adds files to what the turn sends with its reply (outbox
	// rows of kind file, addressed by the core); false when the lane has
	// no turn to take them, and they are not sent.
	AddFiles(files []store.OutboxMessage) bool

	Lane() Lane
	// Row is the lane's row as the turn read it; SetRow replaces it (a
	// new session).
	Row() store.Lane
	SetRow(sl store.Lane)
}

// WorkHooks are the points around a lane's queued work where features
// that act on it take part (a disk quota, lane isolation, transcription,
// the files the agent sends), and the services they use: the lane's
// directories, its files, the lane running a thread.
type WorkHooks interface {
	// OnRefuse runs before a queued item is processed: a non-empty reason
	// refuses it, and the core answers the item with the reason and closes
	// it instead of running it (the first hook to refuse wins).
	OnRefuse(fn func(ctx context.Context, l Lane, it Item) (reason string))
	// OnAfter runs in the lane's worker once an item was processed and
	// committed, before the lane's next item: what the work left behind
	// (files) can be looked at there.
	OnAfter(fn func(ctx context.Context, l Lane, it Item))
	// OnPrepare runs before a turn's thread is loaded, once the core
	// chose the turn's working directory (Turn.Dir).
	OnPrepare(fn func(ctx context.Context, t Turn))
	// OnThread adjusts the config a lane's thread is started or resumed
	// with (sl is the lane's row, dir its working directory). Hooks of the
	// core ran before.
	OnThread(fn func(sl store.Lane, dir string, cfg *codex.ThreadConfig))
	// OnInput adjusts what turn/start sends. Hooks of the core ran before.
	OnInput(fn func(ctx context.Context, t Turn, in *codex.TurnInput))
	// OnAudio transcribes: fn runs in the prepare step, before the turn,
	// for each voice note or audio file of its message (path, in the
	// lane's files), and returns what to add to the turn's text ("" adds
	// nothing). With one registered, intake no longer tells a lane that
	// audio goes to the agent untranscribed.
	OnAudio(fn func(ctx context.Context, l Lane, path string) (text string))
	// OnFinished sees a turn that ran to an answer, before its commit.
	OnFinished(fn func(t Turn, res codex.TurnResult))
	// Tool offers a dynamic tool on every thread the gateway starts or
	// resumes, and answers its calls with fn (Gateway.ToolCall, where
	// the daemon routes codex's tool calls).
	Tool(spec codex.DynamicTool, fn func(ctx context.Context, call codex.ToolCall) codex.ToolResult)
	// LaneOfThread is the lane whose thread (loaded or running) is
	// threadID; false when no lane has it.
	LaneOfThread(threadID string) (Lane, bool)

	// LaneDirs are the directories that are the lane's own, as the
	// gateway's configuration places them.
	LaneDirs(sessionKey string) LaneDirs
	// Files is where the lanes' files are kept (attachments, what the
	// agent sends); nil when the gateway keeps none.
	Files() *files.Store
	// LaneProfile is the app-server's permissions profile that keeps a
	// lane's commands to the roots its thread and turns name
	// (codex.LaneProfile); "" when lanes are not isolated.
	LaneProfile() string
}

// Item is a queued message or task as a feature sees it.
type Item struct {
	Turn      bool   // it runs a turn; false for a command's task (/new, /undo)
	InboundID int64  // its inbound row
	ReplyTo   string // the platform message its answers reply to ("" when none)
}

// LaneDirs are the directories no other lane and no operator shares: what
// a lane's commands may fill. A project's checkout is the operator's and
// is not among them. "" is a directory the configuration does not give
// the lane.
type LaneDirs struct {
	Work      string // its working directory under codex.cwd (isolated lanes only)
	Worktrees string // the directory of all its worktrees (lanes.worktrees)
	Temp      string // its temporary directory, its commands' TMPDIR and HOME (isolated lanes)
	Files     string // its files directory
}

// All are the directories that are set.
func (d LaneDirs) All() []string {
	var all []string
	for _, dir := range []string{d.Work, d.Worktrees, d.Temp, d.Files} {
		if dir != "" {
			all = append(all, dir)
		}
	}
	return all
}

// RunningTurn is a lane's turn while codex runs it, as a tool call sees it.
type RunningTurn interface {
	Dir() string // its working directory
	// SendFile adds a file to what the turn sends with its reply (an
	// outbox row of kind file, addressed by the core); false when the
	// turn is no longer the lane's or has answered, and it is not sent.
	SendFile(f store.OutboxMessage) bool
}
