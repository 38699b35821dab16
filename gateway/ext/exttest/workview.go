package exttest

import (
	"context"
	"sync"
	"time"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
)

// Views are what the fake host offers a work view (ext.WorkViewHooks) and
// command buttons (ext.CommandHooks).
type Views struct {
	// Platform is every platform's status messages (nil: no platform
	// runs).
	Platform ext.StatusMessages
	// Interval is PreviewInterval's answer.
	Interval time.Duration
	// Ticks is what Ticker returns (nil: a channel that never ticks).
	Ticks chan time.Time
	// DeliverErr, when set, is Deliver's answer.
	DeliverErr error

	mu        sync.Mutex
	watches   []func(t ext.Turn, replyTo string, started time.Time) ext.TurnWatcher
	delivered []chat.Inbound
}

func (v *Views) OnWatch(fn func(t ext.Turn, replyTo string, started time.Time) ext.TurnWatcher) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.watches = append(v.watches, fn)
}

// StatusMessages is Platform for any platform; false when it is nil.
func (v *Views) StatusMessages(string) (ext.StatusMessages, bool) {
	return v.Platform, v.Platform != nil
}

func (v *Views) PreviewInterval() time.Duration { return v.Interval }

// Ticker is Ticks; stop does nothing.
func (v *Views) Ticker(time.Duration) (<-chan time.Time, func()) {
	if v.Ticks == nil {
		return make(chan time.Time), func() {}
	}
	return v.Ticks, func() {}
}

// Watch runs the watch hooks for the turn t about to run, and returns
// what watches it: the test then drives it (Progress, Stop).
func (v *Views) Watch(t *Turn, replyTo string, started time.Time) []ext.TurnWatcher {
	v.mu.Lock()
	fns := append([]func(ext.Turn, string, time.Time) ext.TurnWatcher(nil), v.watches...)
	v.mu.Unlock()
	var out []ext.TurnWatcher
	for _, fn := range fns {
		if w := fn(t, replyTo, started); w != nil {
			out = append(out, w)
		}
	}
	return out
}

// Deliver records in; DeliverErr, when set, refuses it.
func (v *Views) Deliver(_ context.Context, in chat.Inbound) (bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.DeliverErr != nil {
		return false, v.DeliverErr
	}
	v.delivered = append(v.delivered, in)
	return false, nil
}

// Delivered are the messages delivered so far.
func (v *Views) Delivered() []chat.Inbound {
	v.mu.Lock()
	defer v.mu.Unlock()
	return append([]chat.Inbound(nil), v.delivered...)
}

// HasCommand reports whether name was registered with the host.
func (h *Host) HasCommand(name string) bool {
	_, ok := h.Registered(name)
	return ok
}

// OfferOnClose drops the buttons: the fake turn has no end to show them.
func (t *Turn) OfferOnClose(...chat.Button) {}

var _ ext.WorkViewHooks = (*Host)(nil)
