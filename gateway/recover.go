package gateway

import (
	"context"
	"fmt"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"
)

// recover runs at start-up, before any platform delivers:
//   - journaled turns were cut off by the last stop: each lane is told once
//     (or, with AutoRetryCutOff, the turn runs again once). Telling marks
//     the entry cut off and closes its inbound row in the same transaction,
//     so a crash right after cannot tell the lane twice, and the entry keeps
//     the text for /retry until it runs or the lane's next turn replaces it;
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
	return g.recoverFrom(ctx, entries, pending)
}

// recoverFrom is recover on the given journal entries and pending rows:
// all of them at start-up, one lane's on a cluster takeover.
func (g *Gateway) recoverFrom(ctx context.Context, entries []store.JournalEntry, pending []store.InboundRow) error {
	// A cut-off turn whose inbound row is still pending was never handled
	// by a recovery; one already marked failed was retried once before.
	fresh := make(map[int64]string, len(pending)) // inbound id → platform message id
	for _, row := range pending {
		fresh[row.ID] = row.MessageID
	}
	cut := make(map[int64]bool, len(entries))
	told := 0
	for _, e := range entries {
		cut[e.InboundID] = true
		if e.CutOff {
			continue // told by an earlier start; kept for /retry
		}
		msgID, isFresh := fresh[e.InboundID]
		if g.recoverCutOff(ctx, e, msgID, g.cfg.AutoRetryCutOff && isFresh) {
			told++
		}
	}
	for _, row := range pending {
		if cut[row.ID] {
			continue
		}
		sl, err := g.st.Lane(ctx, row.SessionKey)
		if err != nil {
			g.log.Error("recover.lane_missing", zap.String("lane", row.SessionKey), zap.Int64("inbound", row.ID), zap.Error(err))
			g.inbox.set(ctx, row.ID, store.InboundFailed)
			continue
		}
		g.log.Info("recover.requeue", zap.String("lane", row.SessionKey), zap.Int64("inbound", row.ID))
		g.in.dispatch(ctx, addressOfLane(sl), row.ID, row.MessageID, row.Text, row.Attachments)
	}
	g.log.Info("recover.done", zap.Int("cut_off", told), zap.Int("pending", len(pending)))
	return nil
}

// Notices of a cut-off turn.
const autoRetryNotice = "Your previous request was cut off by a restart; running it again."

// recoverCutOff tells a lane its turn was cut off (or reruns it once, as
// the reply to msgID) and reports whether the lane was told now. An entry
// the lane has moved past is dropped with its inbound row closed, so no
// later start runs it.
func (g *Gateway) recoverCutOff(ctx context.Context, e store.JournalEntry, msgID string, autoRetry bool) bool {
	sl, err := g.st.Lane(ctx, e.SessionKey)
	if err != nil || sl.Generation != e.Generation {
		g.log.Info("recover.cut_off_dropped", zap.String("lane", e.SessionKey),
			zap.Bool("lane_found", err == nil), zap.Error(err))
		g.inbox.set(ctx, e.InboundID, store.InboundFailed)
		g.journal.clear(ctx, e.SessionKey)
		return false
	}
	l := g.lanes.get(addressOfLane(sl))
	text := CutOffNotice
	if autoRetry {
		text = autoRetryNotice
	}
	if _, err := g.st.MarkCutOff(ctx, e, noticeFor(l.addr, "", text)); err != nil {
		// Left as it was: the next start tries again, so the lane is
		// still told once.
		g.log.Error("recover.cut_off_mark_failed", zap.String("lane", e.SessionKey), zap.Error(err))
		return false
	}
	g.out.poke()
	g.log.Warn("recover.cut_off", zap.String("lane", e.SessionKey), zap.Int64("inbound", e.InboundID),
		zap.Bool("auto_retry", autoRetry))
	if autoRetry {
		g.sched.enqueue(ctx, l, item{kind: itemTurn, inboundID: e.InboundID, msgID: msgID, text: e.Text, retry: true})
	}
	return true
}
