package node

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/store"
)

// fence is the lease a lane's writes carry: the current one, or the one
// lost, which the database refuses.
func (c *Coordinator) fence(key string) (string, int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if h, ok := c.owned[key]; ok {
		return h.lease.Name, h.lease.Token, true
	}
	if l, ok := c.lost[key]; ok {
		return l.Name, l.Token, true
	}
	return "", 0, false
}

// fenced: the database refused one of the lane's writes; step down.
func (c *Coordinator) fenced(key string, err error) {
	c.log.Warn("cluster.write_fenced", zap.String("lane", key), zap.Error(err))
	go c.stepDown(key, "write refused by the fence")
}

func (c *Coordinator) leaseLost(l cluster.Lease, err error) {
	if c.shardLeaseLost(l, err) {
		return
	}
	if l.Name == cluster.PollerLease {
		c.mu.Lock()
		stop := c.poller
		c.poller = nil
		c.mu.Unlock()
		c.log.Warn("cluster.poller_lost", zap.Error(err))
		if stop != nil {
			stop()
		}
		return
	}
	c.log.Warn("cluster.lease_lost", zap.String("lease", l.Name), zap.Int64("token", l.Token), zap.Error(err))
	// Not on the keeper goroutine: stepping down waits for codex, and the
	// other leases must go on being renewed meanwhile.
	go c.stepDown(strings.TrimPrefix(l.Name, cluster.LanePrefix), "lease lost")
}

func (c *Coordinator) renewed(l cluster.Lease) {
	c.mu.Lock()
	key := strings.TrimPrefix(l.Name, cluster.LanePrefix)
	h, ok := c.owned[key]
	if ok && h.lease == l {
		c.owned[key] = heldLease{lease: l, renewed: c.now()}
	}
	c.mu.Unlock()
	if ok && h.lease == l && h.lapsed {
		c.regained(key, l)
	}
}

// disown takes the lane out of the leases this node serves and remembers
// its lease as lost; ok is false when the node did not own it.
func (c *Coordinator) disown(key string) (heldLease, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.owned[key]
	if ok {
		delete(c.owned, key)
		c.lost[key] = h.lease
		delete(c.unrecovered, key) // the next owner recovers it
		delete(c.handOverTries, key)
	}
	return h, ok
}

// stepDown stops serving the lane: no delivery, no claims, the agent
// dropped; its writes from now on are refused by the database.
func (c *Coordinator) stepDown(key, why string) {
	h, ok := c.disown(key)
	if !ok {
		return
	}
	c.keeper.Drop(h.lease.Name)
	c.log.Warn("cluster.lane_dropped", zap.String("lane", key), zap.String("why", why))
	ctx, cancel := context.WithTimeout(context.Background(), clusterCallTO)
	defer cancel()
	c.gw.StepDown(ctx, key)
}

// Serves is gateway.LaneGate: the lane's lease is held and, by this
// process's clock, not yet past its TTL (a node paused past it must not
// send before it notices).
func (c *Coordinator) Serves(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.owned[key]
	return ok && !h.lapsed && c.now().Sub(h.renewed) < c.ttl
}

// Recorded is gateway.LaneGate: wake this node's loop and, through
// NOTIFY, every other node's.
func (c *Coordinator) Recorded(key string) {
	c.poke()
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), clusterCallTO)
		defer cancel()
		if _, err := c.db.ExecContext(ctx, "SELECT pg_notify($1, $2)", inboxChannel, key); err != nil {
			c.log.Warn("cluster.notify_failed", zap.Error(err))
		}
	}()
}

// TurnCommitted is gateway.LaneGate: ship the thread's new rollout tail,
// fenced by the lane's lease, so another node can resume it.
func (c *Coordinator) TurnCommitted(key, threadID string) {
	if threadID == "" {
		return
	}
	go c.ship(key, threadID, time.Now())
}

func (c *Coordinator) ship(key, threadID string, committed time.Time) {
	mu := c.laneLock(key)
	mu.Lock()
	defer mu.Unlock()
	c.mu.Lock()
	h, ok := c.owned[key]
	c.mu.Unlock()
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), clusterCallTO)
	defer cancel()
	start := time.Now()
	res, err := c.rollouts.Ship(ctx, c.codexHome, threadID, h.lease)
	if err != nil {
		c.log.Warn("cluster.ship_failed", zap.String("lane", key), zap.String("thread", threadID), zap.Error(err))
		if errors.Is(err, cluster.ErrFenced) {
			go c.stepDown(key, "ship refused by the fence")
		}
		return
	}
	c.shipLag.Observe(time.Since(committed).Seconds())
	c.log.Info("cluster.shipped", zap.String("lane", key), zap.String("thread", threadID),
		zap.Int64("bytes", res.Bytes), zap.Duration("took", time.Since(start)))
}

func (c *Coordinator) laneLock(key string) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	mu, ok := c.laneMu[key]
	if !ok {
		mu = &sync.Mutex{}
		c.laneMu[key] = mu
	}
	return mu
}

// handOver releases the idle lanes that placement now puts on another live
// node (one that joined), so about 1/N of the lanes move to a new node. A
// lane with work in the database (a row to run, a turn journaled, a reply
// to send) or in memory stays until it is idle. A node that does not see
// itself live (its heartbeat late) hands nothing over.
func (c *Coordinator) handOver(ctx context.Context, busy []string, live []string) {
	if !slices.Contains(live, c.node.ID()) {
		return
	}
	c.mu.Lock()
	var owned []string
	for key := range c.owned {
		owned = append(owned, key)
	}
	c.mu.Unlock()
	for _, key := range owned {
		if _, found := slices.BinarySearch(busy, key); found {
			continue
		}
		if owner, err := cluster.Place(key, live); err != nil || owner == c.node.ID() {
			continue
		}
		c.release(ctx, key)
	}
}

// release hands an idle lane over to the node placement now names, once
// its rollout is shipped through its last committed turn.
func (c *Coordinator) release(ctx context.Context, key string) {
	mu := c.laneLock(key)
	mu.Lock()
	defer mu.Unlock()
	if !c.gw.LaneIdle(key) {
		return
	}
	c.mu.Lock()
	h, ok := c.owned[key]
	c.mu.Unlock()
	if !ok || !c.handOverShipped(ctx, key, h.lease) {
		return
	}
	if c.letGo(ctx, key) {
		c.log.Info("cluster.lane_handed_over", zap.String("lane", key))
	}
}

// serve claims the lane's new rows if this node owns it, or takes the lane
// if placement puts it here and its lease is free or expired. It returns
// the lease name when the lane is placed here but still held elsewhere.
func (c *Coordinator) serve(ctx context.Context, key string, live []string) (blocked string) {
	mu := c.laneLock(key)
	mu.Lock()
	defer mu.Unlock()
	if c.Serves(key) {
		if c.recoverPending(ctx, key) {
			c.claim(ctx, key)
		}
		return ""
	}
	if c.holds(key) {
		// Lapsed or late: the keeper renews it or reports it taken.
		// Acquiring it again would fence off this node's own work.
		return ""
	}
	if owner, err := cluster.Place(key, live); err != nil || owner != c.node.ID() {
		return ""
	}
	l, ok, err := c.node.Acquire(ctx, cluster.LanePrefix+key, c.ttl)
	if err != nil {
		c.log.Warn("cluster.acquire_failed", zap.String("lane", key), zap.Error(err))
		return ""
	}
	if !ok {
		return cluster.LanePrefix + key // held by a live owner, or its lease has not run out yet
	}
	c.take(ctx, key, l)
	return ""
}

// take starts serving a lane just acquired: its thread's rollout is
// restored here, its received rows claimed, and the start-up recovery run
// for it (unfinished rows in order, a cut-off turn told once).
func (c *Coordinator) take(ctx context.Context, key string, l cluster.Lease) {
	c.hold(key, l)
	c.takeovers.Inc()
	c.log.Info("cluster.lane_taken", zap.String("lane", key), zap.Int64("token", l.Token))
	if !c.restore(ctx, key) {
		return
	}
	if _, err := c.st.ClaimInbound(ctx, key); err != nil {
		c.log.Warn("cluster.claim_failed", zap.String("lane", key), zap.Error(err))
	}
	c.mu.Lock()
	c.unrecovered[key] = true
	c.mu.Unlock()
	c.recoverPending(ctx, key)
}

// hold makes l the lease the lane's writes carry and keeps it renewed.
func (c *Coordinator) hold(key string, l cluster.Lease) {
	c.mu.Lock()
	c.owned[key] = heldLease{lease: l, renewed: c.now()}
	delete(c.lost, key)
	c.mu.Unlock()
	c.keeper.Hold(l)
}

// restore puts the lane's shipped rollout under this node's CODEX_HOME with
// its thread unloaded from the app-server, so the lane goes on from the last
// turn shipped, whatever this node's copy held. A lane whose rollout cannot
// be restored is not served from that copy: its thread is given up and its
// next turn starts a fresh one, telling the lane once. ok is false when the
// lane was let go instead, to be taken and restored in a later round: a
// turn it was stepped down from still ends on the thread, or giving the
// thread up could not be recorded.
func (c *Coordinator) restore(ctx context.Context, key string) (ok bool) {
	sl, err := c.st.Lane(ctx, key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		c.log.Warn("cluster.restore_failed", zap.String("lane", key), zap.Bool("retry", true), zap.Error(err))
		c.letGo(ctx, key) // its thread unknown: not served from whatever copy is here
		return false
	}
	if err != nil || sl.ThreadID == "" || sl.Binding == store.BindingLost {
		return true // no thread to resume: the next turn starts one
	}
	committed, err := c.committedTurns(ctx, key, sl.ThreadID)
	if err != nil {
		c.log.Warn("cluster.restore_failed", zap.String("lane", key), zap.Bool("retry", true), zap.Error(err))
		c.letGo(ctx, key) // what the rollout must cover unknown: not served from a copy that may lack it
		return false
	}
	var res cluster.Restored
	err = c.gw.RestoreThread(ctx, key, sl.ThreadID, func(ctx context.Context) error {
		var err error
		res, err = c.rollouts.RestoreCovering(ctx, c.codexHome, sl.ThreadID, committed)
		return err
	})
	return c.restored(ctx, key, sl, res, err)
}

// restored logs what restore did and settles a failure: ok as restore's.
func (c *Coordinator) restored(ctx context.Context, key string, sl store.Lane, res cluster.Restored, err error) (ok bool) {
	lane, thread := zap.String("lane", key), zap.String("thread", sl.ThreadID)
	for _, aside := range res.MovedAside {
		c.log.Warn("cluster.rollout_moved_aside", lane, thread, zap.String("moved_to", aside))
	}
	if len(res.Rebuilt) > 0 {
		// The owner died between these turns' commits and their ship: the
		// thread gets their messages back, not their tool calls.
		c.log.Warn("cluster.rollout_rebuilt", lane, thread, zap.Strings("turns", res.Rebuilt))
	}
	if res.LocalTail {
		c.log.Info("cluster.rollout_local_tail", lane, thread, zap.String("why", "this node's copy holds the committed turns never shipped"))
	}
	switch {
	case errors.Is(err, cluster.ErrNoRollout): // never shipped: nothing another node could have gone on from
	case errors.Is(err, gateway.ErrLaneBusy):
		c.log.Info("cluster.restore_skipped", lane, thread, zap.String("why", "a turn of the lane runs here"))
	case errors.Is(err, gateway.ErrTurnWindingDown):
		c.log.Warn("cluster.restore_failed", lane, thread, zap.Bool("retry", true), zap.Error(err))
		c.letGo(ctx, key)
		return false
	case err != nil:
		c.log.Warn("cluster.restore_failed", lane, thread, zap.Error(err))
		return c.abandonThread(ctx, key, sl)
	default:
		c.log.Info("cluster.restored", lane, thread, zap.Int64("bytes", res.Bytes), zap.Bool("written", res.Written),
			zap.Strings("moved_aside", res.MovedAside))
	}
	return true
}

// abandonThread marks the lane's binding lost, the path of a thread codex
// cannot resume: its next turn starts a new thread and tells the lane once.
// If that cannot be written, the lane is let go rather than served from a
// copy that may be stale; ok is false then.
func (c *Coordinator) abandonThread(ctx context.Context, key string, sl store.Lane) (ok bool) {
	err := c.st.MarkBindingLost(ctx, key, sl.Generation, sl.ThreadID, "its rollout could not be restored on this node")
	if err == nil {
		c.log.Warn("cluster.thread_abandoned", zap.String("lane", key), zap.String("thread", sl.ThreadID))
		return true
	}
	c.log.Error("cluster.abandon_failed", zap.String("lane", key), zap.String("thread", sl.ThreadID), zap.Error(err))
	c.letGo(ctx, key)
	return false
}

// letGo gives up a lane this node holds: forgotten here, the gateway
// stepped down, the lease released. It reports whether the lease was
// released (else the lease expires on its own). A lane just taken is let
// go so before anything of it ran here.
func (c *Coordinator) letGo(ctx context.Context, key string) bool {
	h, ok := c.disown(key)
	if !ok {
		return false
	}
	c.keeper.Drop(h.lease.Name)
	c.gw.StepDown(ctx, key)
	if err := c.node.Release(ctx, h.lease); err != nil {
		c.log.Warn("cluster.release_failed", zap.String("lane", key), zap.Error(err))
		return false
	}
	return true
}

func (c *Coordinator) claim(ctx context.Context, key string) {
	rows, err := c.st.ClaimInbound(ctx, key)
	if err != nil {
		c.log.Warn("cluster.claim_failed", zap.String("lane", key), zap.Error(err))
		return
	}
	c.gw.DispatchClaimed(ctx, rows)
}
