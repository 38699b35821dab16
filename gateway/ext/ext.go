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
	// Call it from a task.
	ReleaseThread(ctx context.Context, why string)
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
	Lane() Lane
	// Row is the lane's row as the turn read it; SetRow replaces it (a
	// new session).
	Row() store.Lane
	SetRow(sl store.Lane)
}
