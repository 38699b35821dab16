package node

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/store"
)

func (c *Coordinator) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// Run heartbeats, takes the lanes placed here and claims their inbox rows
// until ctx ends: at every wake (a row recorded here or NOTIFYed by another
// node), at most ttl/4 apart (heartbeats), and as soon as a takeover may
// have become possible (nextRound), so a dead node's lanes move the moment
// the database lets them rather than at the next ttl/4 tick.
func (c *Coordinator) Run(ctx context.Context) {
	go c.listen(ctx)
	go c.writeStream(ctx)
	go c.runCalls(ctx)
	timer := time.NewTimer(c.ttl / 4)
	defer timer.Stop()
	for ctx.Err() == nil {
		blocked := c.round(ctx)
		timer.Reset(c.nextRound(ctx, blocked))
		select {
		case <-ctx.Done():
		case <-timer.C:
		case <-c.wake:
		}
	}
}

// Bounds of the wait between rounds: wakeSlack past the database's expiry
// so the round finds it expired, minRoundGap so a clock quirk cannot make
// the loop spin.
const (
	wakeSlack   = 5 * time.Millisecond
	minRoundGap = 10 * time.Millisecond
)

// nextRound is how long to wait for the next round: until another node's
// heartbeat goes stale or a lease that blocked a takeover here expires
// (cluster.Node.NextChange), at most ttl/4.
func (c *Coordinator) nextRound(ctx context.Context, blocked []string) time.Duration {
	period := c.ttl / 4
	d, ok, err := c.node.NextChange(ctx, c.ttl, blocked)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn("cluster.next_change_failed", zap.Error(err))
		}
		return period
	}
	if !ok {
		return period
	}
	return min(max(d+wakeSlack, minRoundGap), period)
}

// round heartbeats, serves the lanes with work and hands over the idle
// ones placement now puts elsewhere. It returns the leases of lanes placed
// here that another node still held.
func (c *Coordinator) round(ctx context.Context) []string {
	if c.isSuperseded() {
		return nil
	}
	if err := c.node.Heartbeat(ctx); errors.Is(err, cluster.ErrSuperseded) {
		c.supersede(err)
		return nil
	} else if err != nil {
		c.log.Warn("cluster.heartbeat_failed", zap.Error(err))
	}
	live, err := c.node.LiveNodes(ctx, c.ttl)
	if err != nil {
		c.log.Warn("cluster.live_nodes_failed", zap.Error(err))
		return nil
	}
	keys, err := c.st.LanesWithWork(ctx)
	if err != nil {
		c.log.Warn("cluster.lanes_failed", zap.Error(err))
		return nil
	}
	var blocked []string
	for _, key := range keys {
		if ctx.Err() != nil {
			return blocked
		}
		if held := c.serve(ctx, key, live); held != "" {
			blocked = append(blocked, held)
		}
	}
	c.retryRecoveries(ctx, keys)
	c.handOver(ctx, keys, live)
	c.balanceShards(ctx, live)
	// The relay's fallbacks: calls whose notification was missed, and
	// the tables' upkeep.
	c.wakeCalls()
	c.pruneStream(ctx)
	return blocked
}

// supersede makes this process inert: another process runs as this node
// id now (this one was paused past its heartbeat and another joined). It
// steps down from every lane and the poller and takes nothing more; its
// writes carry tokens the database already refuses. Closing gone then
// stops the daemon: an inert process left running would only hide from
// the operator that two machines share a node id.
func (c *Coordinator) supersede(err error) {
	c.mu.Lock()
	if c.superseded {
		c.mu.Unlock()
		return
	}
	c.superseded = true
	defer close(c.gone)
	owned := make([]string, 0, len(c.owned))
	for key := range c.owned {
		owned = append(owned, key)
	}
	stop := c.poller
	c.poller = nil
	c.mu.Unlock()
	c.log.Error("cluster.superseded", zap.Error(err))
	if stop != nil {
		stop()
	}
	c.keeper.Drop(cluster.PollerLease)
	c.dropShards()
	for _, key := range owned {
		c.stepDown(key, "node id taken over by a newer process")
	}
}

func (c *Coordinator) isSuperseded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.superseded
}

// listen wakes the loop on every NOTIFY of a recorded row; the ticker
// covers the time it is reconnecting. It tries again every second at
// most, and wakes the loop once connected: the database back after an
// outage, a takeover whose recovery failed is retried at once rather
// than at the next round.
func (c *Coordinator) listen(ctx context.Context) {
	for ctx.Err() == nil {
		if err := c.listenOnce(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("cluster.listen_failed", zap.Error(err))
			select {
			case <-ctx.Done():
			case <-time.After(min(c.ttl/4, time.Second)):
			}
		}
	}
}

func (c *Coordinator) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, c.pgcfg)
	if err != nil {
		return errors.New("connect failed") // pgx's message may quote the DSN
	}
	defer conn.Close(context.Background())
	for _, ch := range []string{inboxChannel, store.AnswerChannel, cluster.StreamChannel, cluster.CallChannel, cluster.CallReplyChannel} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return err
		}
	}
	c.poke()
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		c.notified(ctx, n.Channel, n.Payload)
	}
}
