package gateway

import (
	"context"
	"errors"
	"fmt"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// LaneGate makes the gateway one node of several on a shared database:
// a lane is served by the node holding its lease. Without a
// gate (one node) every lane is this gateway's.
type LaneGate interface {
	// Recorded says an inbound message of the lane is in the shared inbox.
	// The gateway does not run it: the lane's owner claims it (ClaimInbound)
	// and hands it to DispatchClaimed, on whichever node that is.
	Recorded(sessionKey string)
	// Serves reports whether this node may still act for the lane: send
	// its outbox, previews and direct notices.
	Serves(sessionKey string) bool
	// TurnCommitted says a turn of the lane was committed, so its rollout
	// can be shipped.
	TurnCommitted(sessionKey, threadID string)
	// OwnedLanes lists the lanes this node owns, so the outbox is read for
	// those lanes only instead of filtered after the read (Serves still
	// checks each row before it is sent).
	OwnedLanes() []string
}

// SetLaneGate puts the gateway in cluster mode. Call it before Run: start-up
// recovery then runs per lane, as each is taken (RecoverLane), not for all.
func (g *Gateway) SetLaneGate(lg LaneGate) {
	g.gate = lg
	g.turns.gate = lg
	g.in.gate = lg
	g.out.SetLaneGate(lg.Serves, lg.OwnedLanes)
	g.present.serves = lg.Serves
}

// Cluster is the face the node coordinator (cluster/node) drives: the
// lanes it takes over, the rows it claimed, the lanes it lost.
func (g *Gateway) Cluster() *ClusterLanes { return g.cluster }

// ClusterLanes runs a node's side of lane ownership: recovering a lane
// taken over, running the rows claimed for it, dropping a lane lost.
type ClusterLanes struct {
	base      context.Context
	st        clusterStore
	lanes     *laneTable
	sched     *scheduler
	threads   *threadCache
	in        *intake
	recovery  *recovery
	inbox     inbox
	log       *zap.Logger
	interrupt func(ctx context.Context, threadID string) error
}

// clusterStore is the part of the store a takeover reads.
type clusterStore interface {
	Journal(ctx context.Context) ([]store.JournalEntry, error)
	PendingInbound(ctx context.Context) ([]store.InboundRow, error)
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
}

var _ clusterStore = (*store.Store)(nil)

// RecoverLane is start-up recovery for one lane this node just took over:
// its cut-off turn is told once (or rerun), its unfinished inbox rows run
// again in order. A failure with the database away (store.Transient)
// comes before any row of the lane runs, for the caller to run it again.
// The caller serialises it with the lane's claims.
func (c *ClusterLanes) RecoverLane(ctx context.Context, sessionKey string) error {
	if err := c.recovery.replay(ctx, sessionKey); err != nil {
		return err
	}
	entries, err := c.st.Journal(ctx)
	if err != nil {
		return fmt.Errorf("gateway: read journal: %w", err)
	}
	pending, err := c.st.PendingInbound(ctx)
	if err != nil {
		return fmt.Errorf("gateway: read pending inbound: %w", err)
	}
	return c.recovery.recoverLane(ctx, onlyLane(entries, sessionKey), claimedRows(pending, sessionKey))
}

func onlyLane(entries []store.JournalEntry, key string) []store.JournalEntry {
	var out []store.JournalEntry
	for _, e := range entries {
		if e.SessionKey == key {
			out = append(out, e)
		}
	}
	return out
}

// claimedRows are the lane's rows claimed (processing): by this takeover or
// by the node that died with them. Rows still received are the next
// claim's, so none runs twice.
func claimedRows(rows []store.InboundRow, key string) []store.InboundRow {
	var out []store.InboundRow
	for _, r := range rows {
		if r.SessionKey == key && r.State == store.InboundProcessing {
			out = append(out, r)
		}
	}
	return out
}

// DispatchClaimed runs inbox rows this node claimed for a lane it owns, in
// the order given. A row whose lane cannot be read now goes back to the
// inbox with the lane's later rows (recovery.rowLane), for the next claim.
func (c *ClusterLanes) DispatchClaimed(ctx context.Context, rows []store.InboundRow) {
	away := map[string]bool{}
	for _, row := range rows {
		sl, ok := c.recovery.rowLane(ctx, row, away)
		if !ok {
			continue
		}
		if c.answered(ctx, addressOfLane(sl), row) {
			continue
		}
		c.in.dispatch(c.base, recordedRow(addressOfLane(sl), row))
	}
}

// answered takes a claimed row that answers a question Codex asks on
// this node (a typed answer another node recorded, not knowing of the
// question) instead of queueing it behind the turn that waits for it.
// The row keeps what the feature says (a secret answer is not kept). The
// answer is applied off the caller, the cluster loop: showing it edits
// the question's message, which may wait on a slow platform.
func (c *ClusterLanes) answered(ctx context.Context, addr Address, row store.InboundRow) bool {
	if row.Origin != "" || len(row.Attachments) > 0 {
		return false
	}
	a, ok := c.in.host.answerOf(Inbound{Address: addr, MessageID: row.MessageID, SenderID: row.SenderID,
		SenderName: row.SenderName, SenderAdmin: row.SenderAdmin, Text: row.Text, ReplyTo: row.ReplyTo,
		ReceivedAt: row.ReceivedAt})
	if !ok {
		return false
	}
	if a.Stored != row.Text {
		if err := c.in.st.SetInboundText(ctx, row.ID, a.Stored); err != nil {
			c.log.Warn("inbound.answer_redact_failed", zap.String("lane", row.SessionKey), zap.Int64("inbound", row.ID), zap.Error(err))
		}
	}
	c.log.Info("cluster.answer_claimed", zap.String("lane", row.SessionKey), zap.String("message", row.MessageID))
	go func() {
		// Done first: the question lives in this process's memory, so an
		// answer a crash interrupts has nothing left to answer anyway.
		c.in.inbox.set(c.base, row.ID, store.InboundDone)
		c.in.applyAnswer(Inbound{Address: addr, MessageID: row.MessageID}, a)
	}()
	return true
}

// StepDown drops a lane this node lost: its queued messages are forgotten
// here (their inbox rows stay for the new owner), a running turn is
// discarded and interrupted, and its thread is released from the
// app-server. Writes the lane still attempts are refused by the database.
func (c *ClusterLanes) StepDown(ctx context.Context, sessionKey string) {
	l := c.lanes.lookup(sessionKey)
	if l == nil {
		return
	}
	running, _, _ := l.discardWork(c.sched.takeQueueLocked)
	c.log.Warn("cluster.stepped_down", zap.String("lane", sessionKey))
	if running != "" {
		if err := c.interrupt(ctx, running); err != nil && !errors.Is(err, codex.ErrNoActiveTurn) {
			c.log.Warn("cluster.stepdown_interrupt_failed", zap.String("lane", sessionKey), zap.Error(err))
		}
	}
	if l.opMu.TryLock() {
		if !l.snapshot().worker {
			c.threads.releaseStale(ctx, l)
			c.lanes.forget(l)
		}
		l.opMu.Unlock()
	}
}

// ErrLaneBusy is RestoreThread's answer for a lane with a turn of its own
// running on this node (a lease re-taken with its work carried over): its
// thread is in use, and neither unloaded nor restored.
var ErrLaneBusy = errors.New("gateway: a turn of the lane runs on this node")

// ErrTurnWindingDown is RestoreThread's answer while a turn the lane was
// stepped down from still runs on its thread (interrupted, not yet ended):
// the thread cannot be unloaded yet.
var ErrTurnWindingDown = errors.New("gateway: a discarded turn still runs on the lane's thread")

// RestoreThread runs restore (the node writing the lane's shipped rollout
// into CODEX_HOME) with the lane's thread unloaded from the app-server and
// no turn of the lane able to load it meanwhile, so the lane's next turn
// resumes what restore left on disk. Without it a node that served the lane
// before (paused past its lease, say) would go on with the history its
// app-server still held in memory, whatever the restore wrote. Neither
// ErrLaneBusy, ErrTurnWindingDown nor another failure to unload the thread
// calls restore. The caller serialises it with the lane's claims.
func (c *ClusterLanes) RestoreThread(ctx context.Context, sessionKey, threadID string, restore func(context.Context) error) error {
	if l := c.lanes.lookup(sessionKey); l != nil {
		l.opMu.Lock() // the lane's ensure waits for the restore
		defer l.opMu.Unlock()
		loaded, busy := l.detachThread()
		if busy {
			return ErrLaneBusy
		}
		c.lanes.unlive(l)
		if loaded != "" && loaded != threadID { // an older generation's, left loaded
			c.threads.release(ctx, sessionKey, loaded, "restore")
		}
	}
	if err := c.threads.unload(ctx, sessionKey, threadID, "restore"); errors.Is(err, codex.ErrTurnActive) {
		return fmt.Errorf("%w: %w", ErrTurnWindingDown, err)
	} else if err != nil {
		return fmt.Errorf("gateway: unload thread %s: %w", threadID, err)
	}
	return restore(ctx)
}

// LaneIdle reports whether the lane has nothing running or queued on this
// node, so its lease can be handed to the node placement now prefers.
func (c *ClusterLanes) LaneIdle(sessionKey string) bool {
	l := c.lanes.lookup(sessionKey)
	if l == nil {
		return true
	}
	return l.snapshot().idle()
}
