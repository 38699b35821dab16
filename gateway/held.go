package gateway

import (
	"context"
	"fmt"
	"sync"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"
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
func (d *deferrals) redeliveries(sessionKey string) uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.redelivers[sessionKey]
}

func (d *deferrals) redelivered(sessionKey string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.redelivers[sessionKey]++
}

// holdDeferred holds a row whose send the platform deferred. redelivers is
// the lane's Redeliver count read before the send: if the platform asked
// for the lane's rows meanwhile, the row is made due again at once.
func (g *Gateway) holdDeferred(ctx context.Context, m store.OutboxMessage, redelivers uint64) {
	if err := g.st.HoldOutbox(ctx, m.ID); err != nil {
		// Still pending and not held: the deliverer sends it again on its
		// next pass, which is what a platform waiting for it wants anyway.
		g.log.Error("outbox.hold_failed", zap.Int64("outbox", m.ID), zap.Error(err))
		return
	}
	g.log.Debug("outbox.held", zap.Int64("outbox", m.ID), zap.String("lane", m.SessionKey))
	if g.deferred.redeliveries(m.SessionKey) != redelivers {
		g.unholdLane(ctx, m.SessionKey)
	}
}

// Delivered marks a deferred row sent: the platform handed it over.
func (g *Gateway) Delivered(ctx context.Context, id int64, platformMessageID string) error {
	if err := g.st.MarkSent(ctx, id, platformMessageID); err != nil {
		return fmt.Errorf("gateway: delivered %d: %w", id, err)
	}
	return nil
}

// Redeliver makes the lane's held rows due again and wakes the deliverer.
func (g *Gateway) Redeliver(ctx context.Context, sessionKey string) error {
	g.deferred.redelivered(sessionKey)
	if _, err := g.st.UnholdLane(ctx, sessionKey); err != nil {
		return fmt.Errorf("gateway: redeliver %s: %w", sessionKey, err)
	}
	g.wakeOutbox()
	return nil
}

func (g *Gateway) unholdLane(ctx context.Context, sessionKey string) {
	if _, err := g.st.UnholdLane(ctx, sessionKey); err != nil {
		g.log.Error("outbox.unhold_failed", zap.String("lane", sessionKey), zap.Error(err))
		return
	}
	g.wakeOutbox()
}

// releaseHeld makes every row held by the last process due again; Run calls
// it before anything is delivered.
func (g *Gateway) releaseHeld(ctx context.Context) error {
	n, err := g.st.UnholdAll(ctx)
	if err != nil {
		return fmt.Errorf("gateway: release held outbox rows: %w", err)
	}
	if n > 0 {
		g.log.Info("outbox.held_released", zap.Int("rows", n))
	}
	return nil
}
