package gateway

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"
)

// recover runs at start-up, before any platform delivers:
//   - journaled turns were cut off by the last stop: each lane gets one
//     notice (or, with AutoRetryCutOff, the turn runs again once); their
//     inbound rows are closed so they are not also re-run below;
//   - inbound rows received but never processed are queued again, in order.
func (g *Gateway) recover(ctx context.Context) error {
	entries, err := g.st.Journal(ctx)
	if err != nil {
		return fmt.Errorf("gateway: read journal: %w", err)
	}
	pending, err := g.st.PendingInbound(ctx)
	if err != nil {
		return fmt.Errorf("gateway: read pending inbound: %w", err)
	}
	// A cut-off turn whose inbound row is still pending was never handled
	// by a recovery; one already marked failed was retried once before.
	fresh := make(map[int64]bool, len(pending))
	for _, row := range pending {
		fresh[row.ID] = true
	}
	seen := make(map[string]bool, len(entries))
	cut := make(map[int64]bool, len(entries))
	for _, e := range entries {
		cut[e.InboundID] = true
		g.setInbound(ctx, e.InboundID, store.InboundFailed)
		if seen[e.SessionKey] {
			continue
		}
		seen[e.SessionKey] = true
		g.recoverCutOff(ctx, e, g.cfg.AutoRetryCutOff && fresh[e.InboundID])
	}
	for _, row := range pending {
		if cut[row.ID] {
			continue
		}
		sl, err := g.st.Lane(ctx, row.SessionKey)
		if err != nil {
			g.log.Error("recover.lane_missing", zap.String("lane", row.SessionKey), zap.Int64("inbound", row.ID), zap.Error(err))
			g.setInbound(ctx, row.ID, store.InboundFailed)
			continue
		}
		g.log.Info("recover.requeue", zap.String("lane", row.SessionKey), zap.Int64("inbound", row.ID))
		g.dispatch(ctx, addressOfLane(sl), row.ID, row.MessageID, row.Text)
	}
	g.log.Info("recover.done", zap.Int("cut_off", len(seen)), zap.Int("pending", len(pending)))
	return nil
}

// recoverCutOff tells a lane its turn was cut off (or reruns it once) and
// clears the journal entry.
func (g *Gateway) recoverCutOff(ctx context.Context, e store.JournalEntry, autoRetry bool) {
	defer g.clearJournal(ctx, e.SessionKey)
	sl, err := g.st.Lane(ctx, e.SessionKey)
	if err != nil {
		g.log.Error("recover.cut_off_lane_missing", zap.String("lane", e.SessionKey), zap.Error(err))
		return
	}
	if sl.Generation != e.Generation {
		g.log.Info("recover.cut_off_stale", zap.String("lane", e.SessionKey))
		return
	}
	l := g.laneFor(addressOfLane(sl))
	g.log.Warn("recover.cut_off", zap.String("lane", e.SessionKey), zap.Int64("inbound", e.InboundID))
	if autoRetry {
		g.notify(ctx, l.addr, "", "Your previous request was cut off by a restart; running it again.")
		g.enqueue(ctx, l, item{kind: itemTurn, inboundID: e.InboundID, text: e.Text})
		return
	}
	g.mu.Lock()
	g.cutoff[e.SessionKey] = e.Text
	g.mu.Unlock()
	g.notify(ctx, l.addr, "", CutOffNotice)
}
