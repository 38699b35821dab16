package gateway

import (
	"context"
	"sync/atomic"
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

// deferrals is the gateway's memory of deferred rows: one count of
// Redeliver calls. The deliverer reads it before a send; a change by the
// time the row is held means a platform asked for rows while the send was
// in flight, after which the hold could strand the row, so it is made due
// again. One count for all lanes keeps this memory constant (API lane names
// are the clients' to choose); a call on another lane only costs an extra
// unhold.
type deferrals struct {
	redelivers atomic.Uint64
}

func newDeferrals() *deferrals { return &deferrals{} }

func (f *deferrals) redeliveries() uint64 { return f.redelivers.Load() }

func (f *deferrals) redelivered() { f.redelivers.Add(1) }
