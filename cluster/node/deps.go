package node

import (
	"context"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/store"
)

// Store is what the node reads and writes of the shared store: which lanes
// have work, a lane's thread and its committed turns, the claim of its inbox rows, and the Telegram
// offset written under the poller's lease.
type Store interface {
	LanesWithWork(ctx context.Context) ([]string, error)
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	ClaimInbound(ctx context.Context, sessionKey string) ([]store.InboundRow, error)
	MarkBindingLost(ctx context.Context, sessionKey string, gen int64, threadID, reason string) error
	ThreadTurns(ctx context.Context, sessionKey, threadID string, limit int) ([]store.ThreadTurn, error)
	Cursor(ctx context.Context, name string) (string, bool, error)
	SetCursorFenced(ctx context.Context, name, value, lease string, token int64) error
}

// Gateway is what the node asks of the gateway whose lanes it serves: run
// the rows it claimed, restore and recover a lane it took, drop one it
// lost, and say whether one is idle enough to hand over.
type Gateway interface {
	DispatchClaimed(ctx context.Context, rows []store.InboundRow)
	RestoreThread(ctx context.Context, sessionKey, threadID string, restore func(context.Context) error) error
	RecoverLane(ctx context.Context, sessionKey string) error
	StepDown(ctx context.Context, sessionKey string)
	LaneIdle(sessionKey string) bool
}

var (
	_ Store   = (*store.Store)(nil)
	_ Gateway = (*gateway.ClusterLanes)(nil)

	_ gateway.LaneGate = (*Coordinator)(nil)
)

// Clock is the time lease validity is judged by: a lease lasts at least the
// TTL from its last renewal by this clock (monotonic in production).
type Clock func() time.Time
