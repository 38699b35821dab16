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

// Metrics counts nothing.
func (h *Host) Metrics() ext.Metrics { return nopMetrics{} }

type nopMetrics struct{}

func (nopMetrics) Tokens(string, string, int64)       {}
func (nopMetrics) TurnFinished(string, time.Duration) {}

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
