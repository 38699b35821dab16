package gateway

import (
	"context"
	"time"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// usageHooks are the points where the features of Codex's usage take part
// (ext.UsageHooks) beyond the turn hooks: the tokens a turn spent, holding
// a lane's work while paused, /retry, and the start of Run.
type usageHooks struct {
	spent   []func(platform string, u codex.Usage)
	hold    []func(l *lane, it item) bool
	holding []func() bool
	retry   []func(ctx context.Context, call commandCall) bool
	start   []func(ctx context.Context)
}

// usageServices are the core's parts the usage hooks' lanes and turns use.
type usageServices struct {
	obs     Observer
	journal journal
}

// extUsageHooks is a feature's host's ext.UsageHooks: the usage hooks and
// the services they use.
type extUsageHooks struct{ *extCore }

var _ ext.UsageHooks = extUsageHooks{}

func newUsageServices(g *Gateway) usageServices {
	return usageServices{obs: g.obs, journal: g.journal}
}

// spent tells the features the usage of a turn that ran.
func (h *host) spent(platform string, u codex.Usage) {
	for _, fn := range h.usage.spent {
		fn(platform, u)
	}
}

// hold reports whether a feature parked the item the lane's worker was
// about to start (the scheduler's check before each item).
func (h *host) hold(l *lane, it item) bool {
	for _, fn := range h.usage.hold {
		if fn(l, it) {
			return true
		}
	}
	return false
}

// holding reports whether a feature holds new turns now.
func (h *host) holding() bool {
	for _, fn := range h.usage.holding {
		if fn() {
			return true
		}
	}
	return false
}

// retried reports whether a feature answered /retry.
func (h *host) retried(ctx context.Context, call commandCall) bool {
	for _, fn := range h.usage.retry {
		if fn(ctx, call) {
			return true
		}
	}
	return false
}

// start runs the start hooks, in Run before recovery.
func (h *host) start(ctx context.Context) {
	for _, fn := range h.usage.start {
		fn(ctx)
	}
}

// OnReady is ext.UsageHooks' (a compaction runs there).
func (e extUsageHooks) OnReady(fn func(ctx context.Context, t ext.Turn)) {
	e.h.hooks.ready = append(e.h.hooks.ready, func(ctx context.Context, t *turn) { fn(ctx, e.turn(t)) })
}

func (e extUsageHooks) OnResult(fn func(ctx context.Context, t ext.Turn, res codex.TurnResult, err error) bool) {
	e.h.hooks.result = append(e.h.hooks.result, func(ctx context.Context, t *turn, res codex.TurnResult, err error) bool {
		return fn(ctx, e.turn(t), res, err)
	})
}

func (e extUsageHooks) OnUsage(fn func(platform string, u codex.Usage)) {
	e.h.usage.spent = append(e.h.usage.spent, fn)
}

func (e extUsageHooks) OnHold(fn func(l ext.Lane, park func(wait func() bool) bool) bool) {
	sched := e.sched
	e.h.usage.hold = append(e.h.usage.hold, func(l *lane, it item) bool {
		return fn(e.lane(l), func(wait func() bool) bool { return sched.park(l, it, wait) })
	})
}

func (e extUsageHooks) OnHolding(fn func() bool) { e.h.usage.holding = append(e.h.usage.holding, fn) }

func (e extUsageHooks) OnRetry(fn func(ctx context.Context, c ext.Call) bool) {
	e.h.usage.retry = append(e.h.usage.retry, func(ctx context.Context, call commandCall) bool {
		return fn(ctx, e.call(call))
	})
}

func (e extUsageHooks) OnStart(fn func(ctx context.Context)) {
	e.h.usage.start = append(e.h.usage.start, fn)
}

func (e extUsageHooks) Draining() bool       { return e.sched.draining() }
func (e extUsageHooks) Metrics() ext.Metrics { return e.usage.obs }

func (x extLane) Resume()       { x.core.sched.resume(x.l) }
func (x extLane) HasWork() bool { return x.l.snapshot().hasWork() }

func (x extTurn) Thread() string        { return x.t.thread }
func (x extTurn) Started() time.Time    { return x.t.started }
func (x extTurn) SetCompacting(on bool) { x.t.cur.setCompacting(on) }

// Requeue puts the turn's item back at the head of its lane's queue,
// followed by the messages steered into it (uncommitted too, so each runs
// as its own turn), with its journal entry cleared.
func (x extTurn) Requeue(ctx context.Context) {
	t := x.t
	t.stopStream()
	x.core.usage.journal.clear(ctx, t.l.key)
	items := []item{t.it}
	if cur := t.l.current(); cur != nil {
		steered := cur.steer.close()
		for i, s := range steered {
			id, name := cur.steer.sender(i)
			items = append(items, item{kind: itemTurn, inboundID: s.InboundID, msgID: s.MessageID, text: s.Text,
				requester: id, requesterName: name})
		}
	}
	x.core.sched.requeue(t.l, items)
}

// call is a command call as a feature sees it.
func (c *extCore) call(call commandCall) ext.Call {
	return ext.Call{Lane: c.lane(call.lane), Name: call.name, Args: call.args, InboundID: call.inboundID,
		MsgID: call.msgID, Sender: call.sender, SenderName: call.senderName}
}
