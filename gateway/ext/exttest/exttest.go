// Package exttest is a fake core for testing a feature package alone: a
// Host that records what the feature registers and says, and a Lane that
// records what it queues.
package exttest

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/worktree"
)

// Notice is one notice a feature sent.
type Notice struct {
	Addr          chat.Address
	ReplyTo, Text string
	File          *ext.File     // a file sent with Text as its caption
	Fork          *ext.Fork     // the fork /fork's answer carries
	Buttons       []chat.Button // the choices offered with Text (NotifyChoices)
}

// Host is an ext.Host that records registrations and notices. Like
// ext.Host it is made of one part per hook family (Triggers, workHooks,
// requests, Views, usageHooks), each in the file of its family, with its
// own lock. Its zero value is not usable: use NewHost.
type Host struct {
	log *zap.Logger
	// Clock is the host's time (default: a fixed instant).
	Clock func() time.Time
	// Admins are the sender ids IsAdmin accepts.
	Admins map[string]bool
	// Config is what ThreadConfig returns for any lane.
	Config codex.ThreadConfig
	// Dir is what ProjectDir and WorkDir return.
	Dir string
	// FileErr, when set, is SendFile's answer.
	FileErr error
	// Open opens a place (nil: the platform cannot).
	Open func(ctx context.Context, near chat.Address, title string) (chat.Address, error)
	// Triggers records the loops and turns of ext.Triggers (triggers.go).
	Triggers
	// workHooks are the work hooks, accepted and mostly not run.
	workHooks
	// requests are Codex's requests' registrations (approvals.go).
	requests
	// Views are the work view's and command buttons' services (workview.go).
	Views
	// Room records the text and ambient hooks (room.go).
	Room
	// Names records the rename hooks and the places renamed (names.go).
	Names

	mu         sync.Mutex
	commands   map[string]ext.Command
	notices    []Notice
	statuses   []func(ctx context.Context, sl store.Lane, b *strings.Builder)
	usageHooks // usage.go
}

var _ ext.Host = (*Host)(nil)

// NewHost is a host logging to t.
func NewHost(t testing.TB) *Host {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	return &Host{log: zaptest.NewLogger(t), Clock: func() time.Time { return now },
		commands: make(map[string]ext.Command)}
}

// Register registers f with h, failing t on an error.
func (h *Host) Register(t testing.TB, f ext.Feature) {
	t.Helper()
	if err := f.Register(h); err != nil {
		t.Fatalf("%s.Register: %v", f.Name(), err)
	}
}

func (h *Host) Command(c ext.Command) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.commands[c.Name] = c
}

func (h *Host) Callback(string, func(context.Context, chat.Inbound))      {}
func (h *Host) OnAdmit(func(context.Context, chat.Inbound) (bool, error)) {}
func (h *Host) OnSession(func(context.Context, ext.Turn))                 {}
func (h *Host) ProjectDir(store.Lane) string                              { return h.Dir }
func (h *Host) WorkDir(store.Lane) string                                 { return h.Dir }
func (h *Host) ThreadConfig(store.Lane) codex.ThreadConfig                { return h.Config }
func (h *Host) Context() context.Context                                  { return context.Background() }
func (h *Host) Logger() *zap.Logger                                       { return h.log }
func (h *Host) Now() time.Time                                            { return h.Clock() }
func (h *Host) IsAdmin(in chat.Inbound) bool                              { return in.SenderAdmin || h.Admins[in.SenderID] }
func (h *Host) IsAdminOf(_, sender string, platformAdmin bool) bool {
	return platformAdmin || h.Admins[sender]
}

func (h *Host) OnStatus(fn func(ctx context.Context, sl store.Lane, b *strings.Builder)) {
	h.statuses = append(h.statuses, fn)
}

func (h *Host) Notify(_ context.Context, addr chat.Address, replyTo, text string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notices = append(h.notices, Notice{Addr: addr, ReplyTo: replyTo, Text: text})
}

// SendFile records f as a notice with the file (Files); FileErr, when
// set, refuses it.
func (h *Host) SendFile(_ context.Context, addr chat.Address, replyTo string, f ext.File) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.FileErr != nil {
		return h.FileErr
	}
	h.notices = append(h.notices, Notice{Addr: addr, ReplyTo: replyTo, Text: f.Caption, File: &f})
	return nil
}

// NotifyFork records a notice with the fork it made.
func (h *Host) NotifyFork(_ context.Context, addr chat.Address, replyTo, text string, f ext.Fork) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notices = append(h.notices, Notice{Addr: addr, ReplyTo: replyTo, Text: text, Fork: &f})
}

// CanOpenPlace reports whether OpenPlace is set.
func (h *Host) CanOpenPlace(string) bool { return h.Open != nil }

// OpenPlace is Open's answer.
func (h *Host) OpenPlace(ctx context.Context, near chat.Address, title string) (chat.Address, error) {
	return h.Open(ctx, near, title)
}

// Notices are the notices sent so far.
func (h *Host) Notices() []Notice {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Notice(nil), h.notices...)
}

// Run runs the registered command name as typed in l with args; it
// reports what the command's Run did (false when it is not registered).
func (h *Host) Run(ctx context.Context, l ext.Lane, name, args, msgID string) bool {
	h.mu.Lock()
	c, ok := h.commands[name]
	h.mu.Unlock()
	if !ok {
		return false
	}
	return c.Run(ctx, ext.Call{Lane: l, Name: name, Args: args, InboundID: 1, MsgID: msgID, Sender: "u1", SenderName: "User"})
}

// Registered is the command registered under name.
func (h *Host) Registered(name string) (ext.Command, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.commands[name]
	return c, ok
}

// Status is the /status lines the features add for row sl.
func (h *Host) Status(ctx context.Context, sl store.Lane) string {
	var b strings.Builder
	for _, fn := range h.statuses {
		fn(ctx, sl, &b)
	}
	return b.String()
}

// Lane is an ext.Lane that records what is queued on it; tasks run when
// RunQueued is called, as the lane's worker would run them.
type Lane struct {
	Addr chat.Address
	// Thread is what LoadThread returns.
	Thread    string
	ThreadErr error
	Retired   bool
	// Busy is what MidWork reports.
	Busy bool
	// AdoptErr and AdoptOutcome answer AdoptThread; Adopted is the thread
	// it adopted, Released whether ReleaseThread ran, ReleaseErr what it
	// answers.
	AdoptErr     error
	AdoptOutcome codex.Outcome
	Adopted      string
	Released     bool
	ReleaseErr   error
	// Tree, TreeWhy and TreeOK are what Worktree returns.
	Tree    worktree.Tree
	TreeWhy string
	TreeOK  bool

	mu     sync.Mutex
	queued []ext.Work
	usage  laneUsage // usage.go
}

var _ ext.Lane = (*Lane)(nil)

func (l *Lane) Key() string           { return l.Addr.SessionKey() }
func (l *Lane) Address() chat.Address { return l.Addr }
func (l *Lane) RetireThread()         { l.Retired = true }

func (l *Lane) LoadThread(context.Context) (string, error) { return l.Thread, l.ThreadErr }
func (l *Lane) MidWork() bool                              { return l.Busy }

func (l *Lane) Worktree(context.Context, store.Lane) (worktree.Tree, string, bool) {
	return l.Tree, l.TreeWhy, l.TreeOK
}

// AdoptThread records id as Adopted once bind accepts it; AdoptErr or
// AdoptOutcome, when set, answer instead.
func (l *Lane) AdoptThread(ctx context.Context, id string, _ codex.ThreadConfig, bind func(ctx context.Context) error) (codex.Ensured, error) {
	if l.AdoptErr != nil {
		return codex.Ensured{}, l.AdoptErr
	}
	en := codex.Ensured{ThreadID: id, Outcome: l.AdoptOutcome}
	if en.Outcome == codex.OutcomeReplaced || en.Outcome == codex.OutcomeStarted {
		return en, nil
	}
	if err := bind(ctx); err != nil {
		return en, err
	}
	l.Adopted = id
	return en, nil
}

// ReleaseThread notes the release and answers ReleaseErr.
func (l *Lane) ReleaseThread(context.Context, string) error {
	l.Released = true
	return l.ReleaseErr
}

// ForkWorktree is Worktree's answer, for the child.
func (l *Lane) ForkWorktree(context.Context, store.Lane, string) (worktree.Tree, string, bool) {
	return l.Tree, l.TreeWhy, l.TreeOK
}

func (l *Lane) Queue(_ context.Context, w ext.Work) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.queued = append(l.queued, w)
}

// Queued is the work queued so far and not yet run.
func (l *Lane) Queued() []ext.Work {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ext.Work(nil), l.queued...)
}

// RunQueued runs the queued tasks in order and drops the queue.
func (l *Lane) RunQueued(ctx context.Context) {
	l.mu.Lock()
	q := l.queued
	l.queued = nil
	l.mu.Unlock()
	for _, w := range q {
		if w.Task != nil {
			w.Task(ctx)
		}
	}
}

// Turn is an ext.Turn of a lane with a row.
type Turn struct {
	L         ext.Lane
	R         store.Lane
	TurnUsage // usage.go
}

var _ ext.Turn = (*Turn)(nil)

func (t *Turn) Lane() ext.Lane       { return t.L }
func (t *Turn) Row() store.Lane      { return t.R }
func (t *Turn) SetRow(sl store.Lane) { t.R = sl }

// workHooks are the work hooks (ext.WorkHooks) and services a feature of
// this fake core registers or asks for: they are accepted and, but for
// the input hooks (Input), not run; a feature that needs them is tested
// through the real core (gateway's harness).
type workHooks struct {
	// Threads are the lanes LaneOfThread finds, by thread id.
	Threads map[string]ext.Lane

	mu     sync.Mutex
	inputs []func(ctx context.Context, t ext.Turn, in *codex.TurnInput)
}

func (w *workHooks) OnInput(fn func(ctx context.Context, t ext.Turn, in *codex.TurnInput)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.inputs = append(w.inputs, fn)
}

// Input runs the input hooks for a turn of l with row sl.
func (w *workHooks) Input(ctx context.Context, l ext.Lane, sl store.Lane, in *codex.TurnInput) {
	w.mu.Lock()
	hooks := append([]func(context.Context, ext.Turn, *codex.TurnInput){}, w.inputs...)
	w.mu.Unlock()
	for _, fn := range hooks {
		fn(ctx, &Turn{L: l, R: sl}, in)
	}
}

func (w *workHooks) OnRefuse(func(context.Context, ext.Lane, ext.Item) string) {}
func (w *workHooks) OnAfter(func(context.Context, ext.Lane, ext.Item))         {}
func (w *workHooks) OnPrepare(func(context.Context, ext.Turn))                 {}
func (w *workHooks) OnThread(func(store.Lane, string, *codex.ThreadConfig))    {}
func (w *workHooks) OnAudio(func(context.Context, ext.Lane, string) string)    {}
func (w *workHooks) OnFinished(func(ext.Turn, codex.TurnResult))               {}
func (w *workHooks) Tool(codex.DynamicTool, func(context.Context, codex.ToolCall) codex.ToolResult) {
}
func (w *workHooks) LaneOfThread(id string) (ext.Lane, bool) { l, ok := w.Threads[id]; return l, ok }
func (w *workHooks) LaneDirs(string) ext.LaneDirs            { return ext.LaneDirs{} }
func (w *workHooks) Files() *files.Store                     { return nil }
func (w *workHooks) LaneProfile() string                     { return "" }

// Running is the lane's running turn: none in this fake.
func (l *Lane) Running() (ext.RunningTurn, bool) { return nil, false }

// Dir is the turn's working directory: the host's.
func (t *Turn) Dir() string { return "" }

// AddFiles accepts nothing: the fake turn sends no files.
func (t *Turn) AddFiles([]store.OutboxMessage) bool { return false }
