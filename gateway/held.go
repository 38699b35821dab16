package gateway

import (
	"context"
	"sync"
)

// Deferred delivery (ErrDeferred, DeliveryReporter): a platform that takes a
// message nobody has received yet (the API lane with no request open, or a
// request whose response is not written yet) makes the outbox hold the row.
// A held row stays pending in the store, so a crash never loses it, but it
// is not retried on a timer and does not hold back the lane's later rows.
// The platform reports it Delivered once someone really has it, or asks to
// Redeliver the lane's held rows when a listener appears (or went away
// before the rows reached it). At start-up every held row is due again: the
// platform's memory of what it held died with the last process.

var _ DeliveryReporter = (*Gateway)(nil)

// Delivered marks a deferred outbox row sent: the platform handed it over.
func (g *Gateway) Delivered(ctx context.Context, id int64, platformMessageID string) error {
	return g.out.delivered(ctx, id, platformMessageID)
}

// Redeliver makes the lane's held rows due again.
func (g *Gateway) Redeliver(ctx context.Context, sessionKey string) error {
	return g.out.redeliver(ctx, sessionKey)
}

// deferrals is the gateway's memory of deferred rows.
type deferrals struct {
	mu sync.Mutex
	// redelivers counts Redeliver calls per lane. The deliverer reads it
	// before a send; a change by the time the row is held means the
	// platform asked for the lane's rows while the send was in flight,
	// after which the hold would have stranded the row.
	redelivers map[string]uint64
}

func newDeferrals() *deferrals {
	return &deferrals{redelivers: map[string]uint64{}}
}

// redeliveries returns the lane's Redeliver count.
func (f *deferrals) redeliveries(sessionKey string) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.redelivers[sessionKey]
}

func (f *deferrals) redelivered(sessionKey string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.redelivers[sessionKey]++
}
