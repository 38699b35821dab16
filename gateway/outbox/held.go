package outbox

import (
	"context"
	"fmt"
	"sync/atomic"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"
)

// Deferred delivery (ErrDeferred): a platform that takes a message nobody
// has received yet (the API lane with no request open, or a request whose
// response is not written yet) makes the outbox hold the row. A held row
// stays pending in the store, so a crash never loses it, but it is not
// retried on a timer and does not hold back the lane's later rows. The
// platform reports it Delivered once someone really has it, or asks to
// Redeliver the lane's held rows when a listener appears (or went away
// before the rows reached it). At start-up every held row is due again
// (ReleaseHeld): the platform's memory of what it held died with the last
// process.

// deferrals is the deliverer's memory of deferred rows: one count of
// Redeliver calls. The deliverer reads it before a send; a change by the
// time the row is held means a platform asked for rows while the send was
// in flight, after which the hold could strand the row, so it is made due
// again. One count for all lanes keeps this memory constant (API lane names
// are the clients' to choose); a call on another lane only costs an extra
// unhold.
type deferrals struct {
	redelivers atomic.Uint64
}

func (f *deferrals) redeliveries() uint64 { return f.redelivers.Load() }

func (f *deferrals) redelivered() { f.redelivers.Add(1) }

// holdDeferred holds a row whose send the platform deferred. redelivers is
// the lane's Redeliver count read before the send: if the platform asked
// for the lane's rows meanwhile, the row is made due again at once.
func (d *Deliverer) holdDeferred(ctx context.Context, m store.OutboxMessage, redelivers uint64) {
	if err := d.st.HoldOutbox(ctx, m.ID); err != nil {
		// Still pending and not held: the deliverer sends it again on its
		// next pass, which is what a platform waiting for it wants anyway.
		d.log.Error("outbox.hold_failed", zap.Int64("outbox", m.ID), zap.Error(err))
		return
	}
	d.log.Debug("outbox.held", zap.Int64("outbox", m.ID), zap.String("lane", m.SessionKey))
	if d.deferred.redeliveries() != redelivers {
		d.unholdLane(ctx, m.SessionKey)
	}
}

// Delivered marks a deferred row sent: the platform handed it over.
func (d *Deliverer) Delivered(ctx context.Context, id int64, platformMessageID string) error {
	if err := d.st.MarkSent(ctx, id, platformMessageID); err != nil {
		return fmt.Errorf("outbox: delivered %d: %w", id, err)
	}
	return nil
}

// Redeliver makes the lane's held rows due again and wakes the deliverer.
func (d *Deliverer) Redeliver(ctx context.Context, sessionKey string) error {
	d.deferred.redelivered()
	if _, err := d.st.UnholdLane(ctx, sessionKey); err != nil {
		return fmt.Errorf("outbox: redeliver %s: %w", sessionKey, err)
	}
	d.Poke()
	return nil
}

func (d *Deliverer) unholdLane(ctx context.Context, sessionKey string) {
	if _, err := d.st.UnholdLane(ctx, sessionKey); err != nil {
		d.log.Error("outbox.unhold_failed", zap.String("lane", sessionKey), zap.Error(err))
		return
	}
	d.Poke()
}

// ReleaseHeld makes every row held by the last process due again; the
// gateway calls it before anything is delivered.
func (d *Deliverer) ReleaseHeld(ctx context.Context) error {
	n, err := d.st.UnholdAll(ctx)
	if err != nil {
		return fmt.Errorf("outbox: release held outbox rows: %w", err)
	}
	if n > 0 {
		d.log.Info("outbox.held_released", zap.Int("rows", n))
	}
	return nil
}
