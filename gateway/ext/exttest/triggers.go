package exttest

import (
	"context"
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

	loops     []func(ctx context.Context)
	triggered []Triggered
}

// Every records fn; Tick runs it.
func (h *Host) Every(_ time.Duration, fn func(ctx context.Context)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Triggers.loops = append(h.Triggers.loops, fn)
}

// Tick runs each registered loop once, as the core's ticker would.
func (h *Host) Tick(ctx context.Context) {
	h.mu.Lock()
	loops := append([](func(ctx context.Context)){}, h.Triggers.loops...)
	h.mu.Unlock()
	for _, fn := range loops {
		fn(ctx)
	}
}

// Trigger runs write and records in when it stored it.
func (h *Host) Trigger(ctx context.Context, addr chat.Address, in *store.Inbound,
	write func(ctx context.Context) (int64, bool, error)) (int64, bool, error) {
	id, stored, err := write(ctx)
	if err != nil || !stored {
		return id, stored, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.Triggers.triggered = append(h.Triggers.triggered, Triggered{Addr: addr, In: *in})
	return id, true, nil
}

// Triggered are the turns triggered so far.
func (h *Host) Triggered() []Triggered {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Triggered(nil), h.Triggers.triggered...)
}

// Serves is false for the lanes in Triggers.NotServed.
func (h *Host) Serves(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.Triggers.NotServed[key]
}

// MakerAllowed is false for the makers in Triggers.Disallowed.
func (h *Host) MakerAllowed(_ chat.Address, maker string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.Triggers.Disallowed[maker]
}
