package gateway

import (
	"context"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// The gateway's two dependencies, Store and Codex (gateway.go), are drawn
// as complete as their one implementation each: *store.Store and
// *codex.Client have every method, so the gateway asserts none at run
// time, and the tests' fakes implement them whole, so unit tests run the
// production path. They are composed of small interfaces grouped by use.
var (
	_ Store = (*store.Store)(nil)
	_ Codex = (*codex.Client)(nil)
)

// laneStore is the lane row: its binding to a codex thread, its
// generation and sessions.
type laneStore interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	EnsureLane(ctx context.Context, k store.LaneKey) (store.Lane, error)
	BindThread(ctx context.Context, sessionKey string, gen int64, threadID string) error
	MarkBindingLost(ctx context.Context, sessionKey string, gen int64, threadID, reason string) error
	ResetLane(ctx context.Context, sessionKey, reason string) (store.Lane, error)
	RotateSession(ctx context.Context, sessionKey string, gen int64, reason string, keepThread bool) (store.Lane, error)
}

// laneSettingsStore is what a lane's commands choose for it: its title
// and other meta, project and options.
type laneSettingsStore interface {
	SetMeta(ctx context.Context, sessionKey string, meta map[string]string) error
	SetProject(ctx context.Context, sessionKey, name string) error
	SetLaneOption(ctx context.Context, sessionKey string, opt store.LaneOption, value string) error
	ForgetProject(ctx context.Context, sessionKey, name string) (bool, error)
}

// inboxStore is the received messages: recorded before they are
// answered, so none is lost across a restart.
type inboxStore interface {
	RecordInbound(ctx context.Context, in store.Inbound) (id int64, duplicate bool, err error)
	// RecordInboundTurn is RecordInbound plus the turn's journal entry in
	// the same commit, for a message an idle lane runs at once.
	RecordInboundTurn(ctx context.Context, in store.Inbound, text string) (id int64, duplicate bool, entry *store.JournalEntry, err error)
	SetInboundState(ctx context.Context, id int64, state string) error
	PendingInbound(ctx context.Context) ([]store.InboundRow, error)
}

// journalStore is the turn in flight on each lane, so a turn that a
// restart cut off is told to its lane.
type journalStore interface {
	JournalTurn(ctx context.Context, e store.JournalEntry) error
	ClearJournal(ctx context.Context, sessionKey string) error
	Journal(ctx context.Context) ([]store.JournalEntry, error)
	MarkCutOff(ctx context.Context, e store.JournalEntry, notice store.OutboxMessage) (int64, error)
	CutOffTurn(ctx context.Context, sessionKey string) (store.JournalEntry, bool, error)
}

// transcriptStore is what turns leave behind: the transcript (with the
// reply to send) and compactions.
type transcriptStore interface {
	CommitTurn(ctx context.Context, t store.CompletedTurn) (store.CommitResult, error)
	Transcript(ctx context.Context, sessionKey string, limit int) ([]store.Message, error)
	RecordCompaction(ctx context.Context, sessionKey, threadID string, before, after int64) error
}

// stateStore keeps gateway-wide values (the usage pause).
type stateStore interface {
	SetState(ctx context.Context, name, value string) error
	State(ctx context.Context, name string) (string, error)
}

// usageStore reads the usage recorded with the last turn.
type usageStore interface {
	LastTurnUsage(ctx context.Context, sessionKey string) (store.TurnUsage, bool, error)
}

// threadRuntime runs turns on codex threads.
type threadRuntime interface {
	EnsureThread(ctx context.Context, storedID string, cfg codex.ThreadConfig) (codex.Ensured, error)
	RunTurn(ctx context.Context, threadID string, in codex.TurnInput, ev codex.TurnEvents) (codex.TurnResult, error)
	Interrupt(ctx context.Context, threadID string) error
	Steer(ctx context.Context, threadID, text string) error
	Compact(ctx context.Context, threadID string) (before, after codex.Usage, err error)
	Release(ctx context.Context, threadID string) error
	Usage(threadID string) (codex.Usage, bool)
}

// accountRuntime is codex's account: whether it can answer, and a
// device-code login started from a chat.
type accountRuntime interface {
	Account(ctx context.Context) (codex.Account, error)
	StartLogin(ctx context.Context) (codex.Login, error)
}

// modelRuntime is codex's models (model/list) and the model and effort
// it runs a thread with when turn/start names none (config/read).
type modelRuntime interface {
	ListModels(ctx context.Context) ([]codex.Model, error)
	ModelDefaults(ctx context.Context) (codex.ModelDefaults, error)
}

// limitRuntime is the account's rate-limit windows: read afresh
// (account/rateLimits/read; only a ChatGPT account has them), or the last
// that codex reported.
type limitRuntime interface {
	RateLimits(ctx context.Context) (codex.RateLimits, error)
	LastRateLimits() (codex.RateLimits, bool)
}
