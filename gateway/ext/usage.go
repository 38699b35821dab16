package ext

import (
	"context"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// UsageHooks are the points where features that watch Codex's usage take
// part in a lane's turns: compaction before a turn, the pause while the
// account's usage limit is reached, and the tokens the turns spend.
type UsageHooks interface {
	// OnReady runs once a turn's thread is loaded, before turn/start
	// (a compaction runs there: Turn.SetCompacting marks it).
	OnReady(fn func(ctx context.Context, t Turn))
	// OnResult sees a turn's outcome before it is committed; fn reports
	// true when it took the turn over (it answered it or put it back with
	// Turn.Requeue) and the core commits nothing.
	OnResult(fn func(ctx context.Context, t Turn, res codex.TurnResult, err error) (taken bool))
	// OnUsage sees the usage codex reported for every turn that ran, on
	// the platform of its lane.
	OnUsage(fn func(platform string, u codex.Usage))
	// OnHold runs in a lane's worker before it starts an item. park puts
	// the item back at the head of the lane's queue and retires the
	// worker when wait, called under the lane's lock, reports true (until
	// Lane.Resume); fn reports whether it parked the item.
	OnHold(fn func(l Lane, park func(wait func() bool) bool) (parked bool))
	// OnHolding reports whether new turns wait now (a message that
	// arrives is then not journaled as starting at once).
	OnHolding(fn func() bool)
	// OnRetry runs first for /retry; fn reports true when it answered the
	// call: its inbound row is closed as done and the core's retry does
	// not run.
	OnRetry(fn func(ctx context.Context, c Call) (handled bool))
	// OnStart runs when the gateway runs, before the messages that wait
	// from before a restart are queued again.
	OnStart(fn func(ctx context.Context))
	// Draining reports whether the gateway is shutting down.
	Draining() bool
	// Metrics are the gateway's counters.
	Metrics() Metrics
}

// Metrics are the gateway's counters a feature adds to.
type Metrics interface {
	// Tokens counts a turn's spend of one kind (input, cached, output,
	// reasoning).
	Tokens(platform, kind string, n int64)
	// TurnFinished counts a turn that ended with status after d.
	TurnFinished(status string, d time.Duration)
}

// TurnUsage is what a usage feature does with a turn.
type TurnUsage interface {
	// Thread is the id of the turn's loaded thread ("" before it loads).
	Thread() string
	// Started is when the turn began.
	Started() time.Time
	// SetCompacting marks whether the thread's active codex turn is a
	// compaction run before this turn: nothing steers into it or
	// interrupts it meanwhile.
	SetCompacting(on bool)
	// Requeue takes the turn back without committing it: its typing and
	// preview stop, its journal entry is cleared and its message, then
	// the messages steered into it, go back to the head of the lane's
	// queue (their inbound rows stay received). Call it from OnResult.
	Requeue(ctx context.Context)
}

// LaneUsage is what a usage feature does with a lane.
type LaneUsage interface {
	// Resume restarts the worker of a lane whose item was parked
	// (UsageHooks.OnHold), if it still has work.
	Resume()
	// HasWork reports whether an item runs or waits in the lane.
	HasWork() bool
}
