package exttest

import (
	"context"
	"sync"
	"time"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// usageHooks are the usage hooks a feature registered (ext.UsageHooks).
type usageHooks struct {
	mu      sync.Mutex
	ready   []func(ctx context.Context, t ext.Turn)
	result  []func(ctx context.Context, t ext.Turn, res codex.TurnResult, err error) bool
	spent   []func(platform string, u codex.Usage)
	hold    []func(l ext.Lane, park func(wait func() bool) bool) bool
	holding []func() bool
	retry   []func(ctx context.Context, c ext.Call) bool
	start   []func(ctx context.Context)
	metrics metrics
}

func (u *usageHooks) OnReady(fn func(ctx context.Context, t ext.Turn)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.ready = append(u.ready, fn)
}

func (u *usageHooks) OnResult(fn func(ctx context.Context, t ext.Turn, res codex.TurnResult, err error) bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.result = append(u.result, fn)
}

func (u *usageHooks) OnUsage(fn func(platform string, u codex.Usage)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.spent = append(u.spent, fn)
}

func (u *usageHooks) OnHold(fn func(l ext.Lane, park func(wait func() bool) bool) bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.hold = append(u.hold, fn)
}

func (u *usageHooks) OnHolding(fn func() bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.holding = append(u.holding, fn)
}

func (u *usageHooks) OnRetry(fn func(ctx context.Context, c ext.Call) bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.retry = append(u.retry, fn)
}

func (u *usageHooks) OnStart(fn func(ctx context.Context)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.start = append(u.start, fn)
}

// Draining is false: the fake core never shuts down.
func (u *usageHooks) Draining() bool { return false }

// Metrics records the counters a feature adds to (Tokens, Finished).
func (u *usageHooks) Metrics() ext.Metrics { return &u.metrics }

// metrics records the tokens and the statuses of finished turns.
type metrics struct {
	mu       sync.Mutex
	tokens   map[string]int64 // "platform/kind" → tokens
	finished []string
}

func (m *metrics) Tokens(platform, kind string, n int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.tokens == nil {
		m.tokens = make(map[string]int64)
	}
	m.tokens[platform+"/"+kind] += n
}

func (m *metrics) TurnFinished(status string, _ time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finished = append(m.finished, status)
}

// Tokens are the tokens counted, by "platform/kind".
func (u *usageHooks) Tokens() map[string]int64 {
	m := &u.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.tokens))
	for k, v := range m.tokens {
		out[k] = v
	}
	return out
}

// Finished are the statuses of the turns a feature counted as finished.
func (u *usageHooks) Finished() []string {
	m := &u.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.finished...)
}

// Ready runs the ready hooks of t, as the core does once its thread is
// loaded.
func (u *usageHooks) Ready(ctx context.Context, t ext.Turn) {
	u.mu.Lock()
	hooks := append([]func(context.Context, ext.Turn){}, u.ready...)
	u.mu.Unlock()
	for _, fn := range hooks {
		fn(ctx, t)
	}
}

// Readies reports how many ready hooks are registered.
func (u *usageHooks) Readies() int {
	u.mu.Lock()
	defer u.mu.Unlock()
	return len(u.ready)
}

// laneUsage is what the usage hooks did with a Lane.
type laneUsage struct {
	resumed int
}

func (l *Lane) Resume() {
	l.mu.Lock()
	l.usage.resumed++
	l.mu.Unlock()
}

// Resumed is how many times Resume ran.
func (l *Lane) Resumed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.usage.resumed
}

// HasWork is what MidWork reports.
func (l *Lane) HasWork() bool { return l.Busy }

// TurnUsage is the usage side of a Turn: its thread and what the hooks
// did with it.
type TurnUsage struct {
	ThreadID string
	At       time.Time // when it started

	mu         sync.Mutex
	compacting []bool // every SetCompacting, in order
	requeued   int
}

func (t *TurnUsage) Thread() string     { return t.ThreadID }
func (t *TurnUsage) Started() time.Time { return t.At }

func (t *TurnUsage) SetCompacting(on bool) {
	t.mu.Lock()
	t.compacting = append(t.compacting, on)
	t.mu.Unlock()
}

func (t *TurnUsage) Requeue(context.Context) {
	t.mu.Lock()
	t.requeued++
	t.mu.Unlock()
}

// Compacting is every SetCompacting of the turn, in order.
func (t *TurnUsage) Compacting() []bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]bool(nil), t.compacting...)
}

// Requeued is how many times Requeue ran.
func (t *TurnUsage) Requeued() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.requeued
}

// Result runs the result hooks of t as the core does before a commit; it
// reports whether one took the turn over.
func (u *usageHooks) Result(ctx context.Context, t ext.Turn, res codex.TurnResult, err error) bool {
	u.mu.Lock()
	hooks := append([]func(context.Context, ext.Turn, codex.TurnResult, error) bool{}, u.result...)
	u.mu.Unlock()
	for _, fn := range hooks {
		if fn(ctx, t, res, err) {
			return true
		}
	}
	return false
}

// Hold runs the hold hooks as l's worker does before it starts an item;
// park stands for the core's parking (it gets the hook's wait). It
// reports whether a hook parked the item.
func (u *usageHooks) Hold(l ext.Lane, park func(wait func() bool) bool) bool {
	u.mu.Lock()
	hooks := append([]func(ext.Lane, func(func() bool) bool) bool{}, u.hold...)
	u.mu.Unlock()
	for _, fn := range hooks {
		if fn(l, park) {
			return true
		}
	}
	return false
}

// Holding reports whether a holding hook holds new turns.
func (u *usageHooks) Holding() bool {
	u.mu.Lock()
	hooks := append([]func() bool{}, u.holding...)
	u.mu.Unlock()
	for _, fn := range hooks {
		if fn() {
			return true
		}
	}
	return false
}

// Retry runs the retry hooks for /retry typed in l; it reports whether
// one answered it.
func (u *usageHooks) Retry(ctx context.Context, l ext.Lane, msgID string) bool {
	u.mu.Lock()
	hooks := append([]func(context.Context, ext.Call) bool{}, u.retry...)
	u.mu.Unlock()
	for _, fn := range hooks {
		if fn(ctx, ext.Call{Lane: l, Name: "retry", InboundID: 1, MsgID: msgID}) {
			return true
		}
	}
	return false
}

// Spent runs the usage hooks for a turn on platform that spent spent.
func (u *usageHooks) Spent(platform string, spent codex.Usage) {
	u.mu.Lock()
	hooks := append([]func(string, codex.Usage){}, u.spent...)
	u.mu.Unlock()
	for _, fn := range hooks {
		fn(platform, spent)
	}
}

// Start runs the start hooks, as Run does.
func (u *usageHooks) Start(ctx context.Context) {
	u.mu.Lock()
	hooks := append([]func(context.Context){}, u.start...)
	u.mu.Unlock()
	for _, fn := range hooks {
		fn(ctx)
	}
}
