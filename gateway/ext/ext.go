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
	"errors"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/worktree"
)

// ErrNoThread is returned when a lane has no Codex thread to act on: none
// was started yet, or its binding was lost (the next turn replaces it).
var ErrNoThread = errors.New("gateway: no Codex thread in this conversation")

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
	// PlaceHooks are where lanes work (projects, worktrees).
	PlaceHooks
	// Triggers start turns no one typed and run background loops.
	Triggers
	// ServerRequests take Codex's approvals and questions (approvals.go).
	ServerRequests
	// Choices offers buttons with a notice (models.go).
	Choices
	WorkViewHooks // the work view: turns watched, status messages
	CommandHooks  // commands run from a button
	// UsageHooks are the hooks of Codex's usage: compaction, the pause.
	UsageHooks
	RoomHooks  // a message's text before it is recorded (room.go)
	TitleHooks // what names lanes (title.go)
	NameHooks  // renames both ways: a lane's place and its Codex thread (names.go)

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
	// OnInput adjusts what turn/start sends, after the core's parts did
	// (in.Model is the turn's model).
	OnInput(fn func(ctx context.Context, t Turn, in *codex.TurnInput))
	// OnStatus adds lines to /status for a lane whose row could be read.
	OnStatus(fn func(ctx context.Context, sl store.Lane, b *strings.Builder))

	// ThreadConfig is the config the thread of the lane whose row is sl
	// runs with, as its turns make it (working directory, confinement).
	ThreadConfig(sl store.Lane) codex.ThreadConfig
	// ProjectDir is the directory of the project of the lane whose row is
	// sl: its checkout, where a terminal session starts.
	ProjectDir(sl store.Lane) string
	// WorkDir is where that lane works: its worktree when it has one,
	// else ProjectDir.
	WorkDir(sl store.Lane) string

	// Notify sends a gateway notice to the lane at addr through the
	// durable outbox, as a reply to the platform message replyTo ("" for
	// none).
	Notify(ctx context.Context, addr chat.Address, replyTo, text string)
	// NotifyFork is Notify for /fork's answer: it carries the lane the
	// fork made and its thread (the API lane returns them).
	NotifyFork(ctx context.Context, addr chat.Address, replyTo, text string, f Fork)
	// CanOpenPlace reports whether the platform can open a conversation
	// place beside another (OpenPlace).
	CanOpenPlace(platform string) bool
	// OpenPlace opens a new conversation place beside near's, named
	// title, and returns its address: a Discord thread, a Telegram forum
	// topic, a new API lane. A chat that cannot hold another is an error
	// wrapping chat.ErrNoPlace whose text says why.
	OpenPlace(ctx context.Context, near chat.Address, title string) (chat.Address, error)
	// SendFile sends f to the lane at addr through the durable outbox, as
	// a reply to replyTo. It fails, and nothing is sent, when the gateway
	// keeps no files or f is larger than it sends (files.max_bytes).
	SendFile(ctx context.Context, addr chat.Address, replyTo string, f File) error
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

// Fork is the lane /fork made and its thread.
type Fork struct {
	Lane     string // its session key
	ThreadID string
}

// File is a file a feature sends to a lane.
type File struct {
	Name    string // the file name the lane sees
	MIME    string
	Caption string // the message text it comes with
	Data    []byte
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

// QueueTurn queues text as a turn of the call's lane, in the lane's
// order, on behalf of who sent the call; review, when set, makes it a
// run of codex's reviewer. The turn closes the call's inbound row: the
// command's Run then reports false.
func (c Call) QueueTurn(ctx context.Context, text string, review *codex.ReviewTarget) {
	c.Lane.Queue(ctx, Work{InboundID: c.InboundID, MsgID: c.MsgID, Text: text, Review: review,
		Requester: c.Sender, RequesterName: c.SenderName})
}

// QueueTask queues task in the call's lane's order: it runs between the
// lane's turns, never beside one, and the call's inbound row is closed
// as done when it returns: the command's Run then reports false.
func (c Call) QueueTask(ctx context.Context, task func(ctx context.Context)) {
	c.Lane.Queue(ctx, Work{InboundID: c.InboundID, MsgID: c.MsgID, Text: c.Args, Task: task})
}

// Work is what a feature queues in a lane's order: a turn, or a task.
type Work struct {
	InboundID int64  // the inbound row the work closes
	MsgID     string // the platform message it answers
	// Text is a turn's prompt as the transcript keeps it.
	Text string
	// Requester and RequesterName are who the turn runs for.
	Requester, RequesterName string
	// Review, when set, makes the turn a run of codex's reviewer.
	Review *codex.ReviewTarget
	// Task, when set, runs instead of a turn; the row is closed as done
	// when it returns.
	Task func(ctx context.Context)
}

// Lane is one conversation as a feature sees it.
type Lane interface {
	LaneUsage
	// Running is the lane's turn while codex runs it, for a tool it
	// calls; false when none runs.
	Running() (RunningTurn, bool)

	Key() string // the session key
	Address() chat.Address
	// RetireThread marks the lane's loaded thread as belonging to an
	// ended session: it is released before the lane's next thread loads.
	RetireThread()
	// Queue queues w after what the lane has waiting.
	Queue(ctx context.Context, w Work)
	// LoadThread loads the lane's bound thread outside a turn, exactly
	// as a turn would, and returns its id: ErrNoThread when the lane has
	// none (a thread codex refused is replaced, and is ErrNoThread too).
	// Call it from a task, so no turn runs on the thread meanwhile.
	LoadThread(ctx context.Context) (string, error)
	// MidWork reports whether a turn is running, or work waits, in the
	// lane (see BetweenTurns).
	MidWork() bool
	// Worktree is the lane's git worktree of its project (sl is its row)
	// as it is on disk now, made if it is missing; without one, ok is
	// false and why says why, in words for the lane.
	Worktree(ctx context.Context, sl store.Lane) (tree worktree.Tree, why string, ok bool)
	// ForkWorktree gives the lane childKey a worktree of the project of
	// this lane (parent is its row) started from its files as they are
	// now; without one, ok is false and why says why.
	ForkWorktree(ctx context.Context, parent store.Lane, childKey string) (tree worktree.Tree, why string, ok bool)
	// AdoptThread makes the Codex thread id the lane's: it resumes it
	// with cfg, then bind records it (the feature's store write); once
	// bound it is the lane's loaded thread and the previous one is
	// released. A thread codex could not resume as itself (en.Outcome is
	// started or replaced) or that bind refuses is released again and
	// nothing changes; err is the resume's or bind's. Call it from a
	// task.
	AdoptThread(ctx context.Context, id string, cfg codex.ThreadConfig, bind func(ctx context.Context) error) (en codex.Ensured, err error)
	// ReleaseThread releases the lane's loaded thread from the app-server
	// (why is logged); its binding stays, so the next turn resumes it.
	// Released, the app-server is no longer the thread's writer and
	// another client may resume it; err says why it still is. Call it
	// from a task.
	ReleaseThread(ctx context.Context, why string) error
}

// BetweenTurns queues task in c's lane as Call.QueueTask does, unless a
// turn is running or work waits there: acting under a running turn would
// act on a thread and files that are still changing, so the lane is told
// to wait instead. It returns what the command's Run returns.
func BetweenTurns(ctx context.Context, h Host, c Call, task func(ctx context.Context)) (done bool) {
	if c.Lane.MidWork() {
		h.Notify(ctx, c.Lane.Address(), c.MsgID, BetweenTurnsText(c.Name))
		return true
	}
	c.QueueTask(ctx, task)
	return false
}

// BetweenTurnsText tells a lane that the command name waits for a quiet
// moment.
func BetweenTurnsText(name string) string {
	return "A turn is running or waiting in this conversation; /" + name +
		" works between turns. Use /stop first, or wait for the answer."
}

// Turn is a turn being prepared or run.
type Turn interface {
	// TurnPlace moves, refuses and names the turn (projects, worktrees).
	TurnPlace
	ClosingButtons // what its end offers
	TurnUsage
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
