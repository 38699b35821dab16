package exttest

import (
	"context"
	"sync"
	"time"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/store"
)

// Triggered is one turn no one typed that a feature started.
type Triggered struct {
	Addr chat.Address
	In   store.Inbound
}

// Triggers is what the host records of ext.Triggers: the loops a feature
// registers (Tick runs them), the turns it triggers. Set NotServed and
// Disallowed before the feature acts.
type Triggers struct {
	// NotServed are the lanes another node serves (Serves is false).
	NotServed map[string]bool
	// Disallowed are the makers MakerAllowed refuses.
	Disallowed map[string]bool

	mu        sync.Mutex
	loops     []func(ctx context.Context)
	triggered []Triggered
}

// Every records fn; Tick runs it.
func (t *Triggers) Every(_ time.Duration, fn func(ctx context.Context)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.loops = append(t.loops, fn)
}

// Tick runs each registered loop once, as the core's ticker would.
func (t *Triggers) Tick(ctx context.Context) {
	t.mu.Lock()
	loops := append([](func(ctx context.Context)){}, t.loops...)
	t.mu.Unlock()
	for _, fn := range loops {
		fn(ctx)
	}
}

// Trigger runs write and records in when it stored it.
func (t *Triggers) Trigger(ctx context.Context, addr chat.Address, in *store.Inbound,
	write func(ctx context.Context) (int64, bool, error)) (int64, bool, error) {
	id, stored, err := write(ctx)
	if err != nil || !stored {
		return id, stored, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.triggered = append(t.triggered, Triggered{Addr: addr, In: *in})
	return id, true, nil
}

// Triggered are the turns triggered so far.
func (t *Triggers) Triggered() []Triggered {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]Triggered(nil), t.triggered...)
}

// Serves is false for the lanes in Triggers.NotServed.
func (t *Triggers) Serves(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.NotServed[key]
}

// MakerAllowed is false for the makers in Triggers.Disallowed.
func (t *Triggers) MakerAllowed(_ chat.Address, maker string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return !t.Disallowed[maker]
}
