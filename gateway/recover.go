package gateway

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/outbox"
	"github.com/gatewayd/gatewayd/gateway/replyspool"
	"github.com/gatewayd/gatewayd/store"
)

// recovery finishes what the last stop cut short: journaled turns and
// inbound rows never processed.
type recovery struct {
	st        recoveryStore
	lanes     *laneTable
	sched     *scheduler
	in        *intake
	out       *outbox.Courier
	inbox     inbox
	journal   journal
	log       *zap.Logger
	autoRetry bool // codex.auto_retry_cut_off: rerun a cut-off turn once instead of asking
	replies   *replyspool.Spool
}

// recoveryStore is the part of the store recovery reads and marks.
type recoveryStore interface {
	Journal(ctx context.Context) ([]store.JournalEntry, error)
	PendingInbound(ctx context.Context) ([]store.InboundRow, error)
	MarkCutOff(ctx context.Context, e store.JournalEntry, notice store.OutboxMessage) (int64, error)
	RetryTurn(ctx context.Context, sessionKey string) (store.RetryTurn, bool, error)
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	RequeueInbound(ctx context.Context, sessionKey string, id int64) error
	replyspool.Committer
}

var _ recoveryStore = (*store.Store)(nil)

// all runs at start-up, before any platform delivers:
//   - journaled turns were cut off by the last stop: each lane is told once
//     (or, with AutoRetryCutOff, the turn runs again once). Telling marks
//     the entry cut off, makes it the lane's turn to retry (retry.go) and
//     closes its inbound row in the same transaction, so a crash right
//     after cannot tell the lane twice;
//   - inbound rows received but never processed are queued again, in order.
func (r *recovery) all(ctx context.Context) error {
	if err := r.replay(ctx, ""); err != nil {
		return err
	}
	entries, err := r.st.Journal(ctx)
	if err != nil {
		return fmt.Errorf("gateway: read journal: %w", err)
	}
	pending, err := r.st.PendingInbound(ctx)
	if err != nil {
		return fmt.Errorf("gateway: read pending inbound: %w", err)
	}
	return r.recoverFrom(ctx, entries, pending)
}

// replay commits the turns whose commit was waiting for the database when
// the process stopped (spooled), before the journal is read: their replies
// go out once and their journal entries are cleared, so none is told cut
// off. A turn whose entry is gone or told (another node took the lane
// meanwhile) is dropped. A failure to replay that is not the database's
// is logged: a bad local file must not stop the start or the lane.
func (r *recovery) replay(ctx context.Context, lane string) error {
	var untold map[int64]bool // inbound ids of journaled turns not told cut off
	n, err := r.replies.Replay(ctx, r.st, lane, func(ct store.CompletedTurn) (bool, error) {
		if untold == nil {
			entries, err := r.st.Journal(ctx)
			if err != nil {
				return false, err
			}
			untold = make(map[int64]bool, len(entries))
			for _, e := range entries {
				untold[e.InboundID] = !e.CutOff
			}
		}
		return untold[ct.InboundID], nil
	})
	if n > 0 {
		r.out.Poke()
	}
	if err != nil && !store.Transient(err) {
		r.log.Error("recover.spool_failed", zap.String("lane", lane), zap.Error(err))
		return nil
	}
	return err
}

// recoverFrom is recover on the given journal entries and pending rows:
// all of them at start-up, where a cut-off turn the database could not
// tell now waits for the next start.
func (r *recovery) recoverFrom(ctx context.Context, entries []store.JournalEntry, pending []store.InboundRow) error {
	cut, told, _ := r.tellCutOffs(ctx, entries, pending)
	r.requeue(ctx, pending, cut, told)
	return nil
}

// recoverLane is recoverFrom for one lane taken over by a cluster node,
// which runs it again while it holds the lane and the recovery fails: a
// cut-off turn the database could not tell now fails it, before any row
// runs, so the next attempt tells the turn first and runs nothing twice.
// Going on as at start-up left the turn untold (and its row processing)
// for as long as the node kept the lane.
func (r *recovery) recoverLane(ctx context.Context, entries []store.JournalEntry, pending []store.InboundRow) error {
	cut, told, err := r.tellCutOffs(ctx, entries, pending)
	if err != nil {
		return err
	}
	r.requeue(ctx, pending, cut, told)
	return nil
}

// tellCutOffs tells the lanes of the journaled turns not told yet that
// they were cut off, and returns the inbound ids of every journaled turn
// and how many were told now. err is the failure of one left untold with
// the database away (store.Transient); the others are told all the same.
func (r *recovery) tellCutOffs(ctx context.Context, entries []store.JournalEntry, pending []store.InboundRow) (cut map[int64]bool, told int, err error) {
	// A cut-off turn whose inbound row is still pending was never handled
	// by a recovery; one already marked failed was retried once before.
	fresh := make(map[int64]store.InboundRow, len(pending)) // by inbound id
	for _, row := range pending {
		fresh[row.ID] = row
	}
	cut = make(map[int64]bool, len(entries))
	var untold []error
	for _, e := range entries {
		cut[e.InboundID] = true
		if e.CutOff {
			continue // told by an earlier start; kept for /retry
		}
		row, isFresh := fresh[e.InboundID]
		ok, err := r.recoverCutOff(ctx, e, row, r.autoRetry && isFresh)
		if ok {
			told++
		}
		if err != nil {
			untold = append(untold, err)
		}
	}
	return cut, told, errors.Join(untold...)
}

// requeue runs the pending rows that are not journaled turns again, in
// order.
func (r *recovery) requeue(ctx context.Context, pending []store.InboundRow, cut map[int64]bool, told int) {
	away := map[string]bool{} // lanes whose row could not be read: the database is away
	for _, row := range pending {
		if cut[row.ID] {
			continue
		}
		if sl, ok := r.rowLane(ctx, row, away); ok {
			r.log.Info("recover.requeue", zap.String("lane", row.SessionKey), zap.Int64("inbound", row.ID))
			r.in.dispatch(ctx, recordedRow(addressOfLane(sl), row))
		}
	}
	r.log.Info("recover.done", zap.Int("cut_off", told), zap.Int("pending", len(pending)))
}

// rowLane reads the lane of an inbox row about to run again. A lane gone
// closes the row failed; a lane that cannot be read now (the database
// away, store.Transient) puts the row, and every later one of the lane,
// back in the inbox as received, so they run in order at the next claim
// (or start) instead of being lost or run out of order.
func (r *recovery) rowLane(ctx context.Context, row store.InboundRow, away map[string]bool) (store.Lane, bool) {
	if !away[row.SessionKey] {
		sl, err := r.st.Lane(ctx, row.SessionKey)
		switch {
		case err == nil:
			return sl, true
		case !store.Transient(err):
			r.log.Error("recover.lane_missing", zap.String("lane", row.SessionKey), zap.Int64("inbound", row.ID), zap.Error(err))
			r.inbox.set(ctx, row.ID, store.InboundFailed)
			return store.Lane{}, false
		}
		r.log.Warn("recover.lane_unreadable", zap.String("lane", row.SessionKey), zap.Int64("inbound", row.ID), zap.Error(err))
		away[row.SessionKey] = true
	}
	if row.State == store.InboundProcessing {
		if err := r.st.RequeueInbound(ctx, row.SessionKey, row.ID); err != nil {
			// Still processing: the lane's next takeover or start runs it.
			r.log.Error("recover.requeue_failed", zap.String("lane", row.SessionKey), zap.Int64("inbound", row.ID), zap.Error(err))
		}
	}
	return store.Lane{}, false
}

// recoverCutOff tells a lane its turn was cut off (or reruns it once, as
// the reply to row, the message's inbound row, on behalf of its sender)
// and reports whether the lane was told now. An entry the lane has moved
// past is dropped with its inbound row closed, so no later start runs it.
// err is why an entry was left untold with the database away
// (store.Transient), for a recovery to be run again.
func (r *recovery) recoverCutOff(ctx context.Context, e store.JournalEntry, row store.InboundRow, autoRetry bool) (bool, error) {
	sl, err := r.st.Lane(ctx, e.SessionKey)
	if store.Transient(err) {
		// Not known to be stale: left as it is, told when the recovery
		// runs again (the lane's next attempt, takeover or start) rather
		// than dropped unheard.
		r.log.Warn("recover.cut_off_deferred", zap.String("lane", e.SessionKey), zap.Error(err))
		return false, fmt.Errorf("gateway: cut-off turn of %s deferred: %w", e.SessionKey, err)
	}
	if err != nil || sl.Generation != e.Generation {
		r.log.Info("recover.cut_off_dropped", zap.String("lane", e.SessionKey),
			zap.Bool("lane_found", err == nil), zap.Error(err))
		r.inbox.set(ctx, e.InboundID, store.InboundFailed)
		r.journal.clear(ctx, e.SessionKey)
		return false, nil
	}
	l := r.lanes.get(addressOfLane(sl))
	text := CutOffNotice(e.Text)
	if autoRetry {
		text = autoRetryNotice(e.Text)
	}
	if _, err := r.st.MarkCutOff(ctx, e, outbox.Notice(l.addr, "", text)); err != nil {
		// Left as it was: the next attempt or start tries again, so the
		// lane is still told once.
		r.log.Error("recover.cut_off_mark_failed", zap.String("lane", e.SessionKey), zap.Error(err))
		if store.Transient(err) {
			return false, fmt.Errorf("gateway: cut-off turn of %s not marked: %w", e.SessionKey, err)
		}
		return false, nil
	}
	r.out.Poke()
	r.log.Warn("recover.cut_off", zap.String("lane", e.SessionKey), zap.Int64("inbound", e.InboundID),
		zap.Bool("auto_retry", autoRetry))
	if autoRetry {
		r.sched.enqueueRetry(ctx, l, item{kind: itemTurn, inboundID: e.InboundID, msgID: row.MessageID, text: e.Text,
			retries: r.retryTurn(ctx, e), requester: row.SenderID, requesterName: row.SenderName})
	}
	return true, nil
}

// retryTurn is the turn to retry MarkCutOff made of e, for the automatic
// rerun to mark retried; nil if it cannot be read (then /retry can run it
// once more).
func (r *recovery) retryTurn(ctx context.Context, e store.JournalEntry) *store.RetryTurn {
	rt, ok, err := r.st.RetryTurn(ctx, e.SessionKey)
	if err != nil || !ok || rt.InboundID != e.InboundID {
		r.log.Warn("recover.retry_turn_unread", zap.String("lane", e.SessionKey), zap.Bool("found", ok), zap.Error(err))
		return nil
	}
	return &rt
}
