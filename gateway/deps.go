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
	outbox.Store
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
	Interrupt(ctx context.Context, threadID string) error   // busy mode, /stop, /new, drain
	Steer(ctx context.Context, threadID, text string) error // busy mode steer
	Release(ctx context.Context, threadID string) error     // the thread cache
}

var (
	_ Store = (*store.Store)(nil)
	_ Codex = (*codex.Client)(nil)
)
