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
	ready   []func(ctx context.Context, t ext.Turn)
	result  []func(ctx context.Context, t ext.Turn, res codex.TurnResult, err error) bool
	spent   []func(platform string, u codex.Usage)
	hold    []func(l ext.Lane, park func(wait func() bool) bool) bool
	holding []func() bool
	retry   []func(ctx context.Context, c ext.Call) bool
	start   []func(ctx context.Context)
	metrics metrics
}

func (h *Host) OnReady(fn func(ctx context.Context, t ext.Turn)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.usage.ready = append(h.usage.ready, fn)
}

func (h *Host) OnResult(fn func(ctx context.Context, t ext.Turn, res codex.TurnResult, err error) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.usage.result = append(h.usage.result, fn)
}

func (h *Host) OnUsage(fn func(platform string, u codex.Usage)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.usage.spent = append(h.usage.spent, fn)
}

func (h *Host) OnHold(fn func(l ext.Lane, park func(wait func() bool) bool) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.usage.hold = append(h.usage.hold, fn)
}

func (h *Host) OnHolding(fn func() bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.usage.holding = append(h.usage.holding, fn)
}

func (h *Host) OnRetry(fn func(ctx context.Context, c ext.Call) bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.usage.retry = append(h.usage.retry, fn)
}

func (h *Host) OnStart(fn func(ctx context.Context)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.usage.start = append(h.usage.start, fn)
}

// Draining is false: the fake core never shuts down.
func (h *Host) Draining() bool { return false }

// Metrics records the counters a feature adds to (Tokens, Finished).
func (h *Host) Metrics() ext.Metrics { return &h.usage.metrics }

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
func (h *Host) Tokens() map[string]int64 {
	m := &h.usage.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[string]int64, len(m.tokens))
	for k, v := range m.tokens {
		out[k] = v
	}
	return out
}

// Finished are the statuses of the turns a feature counted as finished.
func (h *Host) Finished() []string {
	m := &h.usage.metrics
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]string(nil), m.finished...)
}

// Ready runs the ready hooks of t, as the core does once its thread is
// loaded.
func (h *Host) Ready(ctx context.Context, t ext.Turn) {
	h.mu.Lock()
	hooks := append([]func(context.Context, ext.Turn){}, h.usage.ready...)
	h.mu.Unlock()
	for _, fn := range hooks {
		fn(ctx, t)
	}
}

// Readies reports how many ready hooks are registered.
func (h *Host) Readies() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.usage.ready)
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
func (h *Host) Result(ctx context.Context, t ext.Turn, res codex.TurnResult, err error) bool {
	h.mu.Lock()
	hooks := append([]func(context.Context, ext.Turn, codex.TurnResult, error) bool{}, h.usage.result...)
	h.mu.Unlock()
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
func (h *Host) Hold(l ext.Lane, park func(wait func() bool) bool) bool {
	h.mu.Lock()
	hooks := append([]func(ext.Lane, func(func() bool) bool) bool{}, h.usage.hold...)
	h.mu.Unlock()
	for _, fn := range hooks {
		if fn(l, park) {
			return true
		}
	}
	return false
}

// Holding reports whether a holding hook holds new turns.
func (h *Host) Holding() bool {
	h.mu.Lock()
	hooks := append([]func() bool{}, h.usage.holding...)
	h.mu.Unlock()
	for _, fn := range hooks {
		if fn() {
			return true
		}
	}
	return false
}

// Retry runs the retry hooks for /retry typed in l; it reports whether
// one answered it.
func (h *Host) Retry(ctx context.Context, l ext.Lane, msgID string) bool {
	h.mu.Lock()
	hooks := append([]func(context.Context, ext.Call) bool{}, h.usage.retry...)
	h.mu.Unlock()
	for _, fn := range hooks {
		if fn(ctx, ext.Call{Lane: l, Name: "retry", InboundID: 1, MsgID: msgID}) {
			return true
		}
	}
	return false
}

// Spent runs the usage hooks for a turn on platform that spent u.
func (h *Host) Spent(platform string, u codex.Usage) {
	h.mu.Lock()
	hooks := append([]func(string, codex.Usage){}, h.usage.spent...)
	h.mu.Unlock()
	for _, fn := range hooks {
		fn(platform, u)
	}
}

// Start runs the start hooks, as Run does.
func (h *Host) Start(ctx context.Context) {
	h.mu.Lock()
	hooks := append([]func(context.Context){}, h.usage.start...)
	h.mu.Unlock()
	for _, fn := range hooks {
		fn(ctx)
	}
}
