package gateway

import (
	"context"

	"github.com/gatewayd/gatewayd/gateway/outbox"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// Store is what the gateway's parts use of *store.Store: the union of the
// small interfaces each part declares beside itself (turnStore in turn.go,
// intakeStore in intake.go, ...). Each is checked at compile time against
// the real store, so the tests' fakes implement every method production
// calls and nothing is asserted at run time.
type Store interface {
	intakeStore
	turnStore
	controlStore
	recoveryStore
	clusterStore
	compactionStore
	outbox.Store
	usageLimitStore
	refusalStore
	AddRoomLine(ctx context.Context, l store.RoomLine) error                                   // room talk
	TakeRoomLines(ctx context.Context, sessionKey string, limit int) ([]store.RoomLine, error) // room talk
	SetInboundState(ctx context.Context, id int64, state string) error                         // inbox
	ClearJournal(ctx context.Context, sessionKey string) error                                 // journal
}

// Codex is what the gateway's parts use of *codex.Client, composed the
// same way.
type Codex interface {
	turnRuntime
	compactionRuntime
	usageRuntime
	Interrupt(ctx context.Context, threadID string) error   // busy mode, /stop, /new, drain
	Steer(ctx context.Context, threadID, text string) error // busy mode steer
	Release(ctx context.Context, threadID string) error     // the thread cache
}

var (
	_ Store = (*store.Store)(nil)
	_ Codex = (*codex.Client)(nil)
)

// stateStore keeps gateway-wide values (the usage pause).
type stateStore interface {
	SetState(ctx context.Context, name, value string) error
	State(ctx context.Context, name string) (string, error)
}

// usageStore reads the usage recorded with the last turn.
type usageStore interface {
	LastTurnUsage(ctx context.Context, sessionKey string) (store.TurnUsage, bool, error)
}

// limitRuntime is the account's rate-limit windows: read afresh
// (account/rateLimits/read; only a ChatGPT account has them), or the last
// that codex reported.
type limitRuntime interface {
	RateLimits(ctx context.Context) (codex.RateLimits, error)
	LastRateLimits() (codex.RateLimits, bool)
}
