package node

import (
	"context"
	"slices"
	"sort"
	"strings"
	"sync"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/cluster"
)

// discordShards is the set of shards this node holds, published to the
// Discord adapter (Config.ShardSets) at every change.
type discordShards struct {
	count int
	mu    sync.Mutex
	held  map[int]cluster.Lease
	sets  chan []int // capacity 1: the adapter reads the latest set
}

// DiscordShardSets makes the node run for the leases of count Discord
// shards (cluster.discord_shards) and returns the adapter's shard source
// (Config.ShardSets): the shards this node holds, at every change. Call it
// before Run.
func (c *Coordinator) DiscordShardSets(count int) <-chan []int {
	c.discord = newDiscordShards(count)
	return c.discord.sets
}

func newDiscordShards(count int) *discordShards {
	return &discordShards{count: count, held: map[int]cluster.Lease{}, sets: make(chan []int, 1)}
}

func (d *discordShards) holds(i int) (cluster.Lease, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	l, ok := d.held[i]
	return l, ok
}

func (d *discordShards) add(i int, l cluster.Lease) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.held[i] = l
	d.publishLocked()
}

// remove forgets the shard held by lease l; false if l is not held (an
// older lease of a shard taken again since).
func (d *discordShards) remove(l cluster.Lease) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, h := range d.held {
		if h == l {
			delete(d.held, i)
			d.publishLocked()
			return true
		}
	}
	return false
}

func (d *discordShards) ids() []int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.idsLocked()
}

func (d *discordShards) idsLocked() []int {
	ids := make([]int, 0, len(d.held))
	for i := range d.held {
		ids = append(ids, i)
	}
	sort.Ints(ids)
	return ids
}

// publishLocked replaces the set waiting for the adapter. Callers hold
// d.mu, so no other send can fill the buffer between the drain and the
// send: it never blocks.
func (d *discordShards) publishLocked() {
	select {
	case <-d.sets:
	default:
	}
	d.sets <- d.idsLocked()
}

// balanceShards takes the shards placement puts on this node when their
// lease is free or expired, and hands over those it now puts on another
// live node (one that joined). A node that does not see itself live hands
// nothing over. Discord reconnects are cheap next to lanes: a shard has no
// turn to finish, and its new holder's READY backfills what the gap missed.
func (c *Coordinator) balanceShards(ctx context.Context, live []string) {
	if c.discord == nil {
		return
	}
	me := c.node.ID()
	for i := range c.discord.count {
		name := cluster.ShardLeaseName(i, c.discord.count)
		owner, err := cluster.Place(name, live)
		if err != nil {
			continue // no live node, not even this one: wait for the heartbeat
		}
		l, held := c.discord.holds(i)
		switch {
		case held && owner != me && slices.Contains(live, me):
			c.releaseShard(ctx, i, l)
		case !held && owner == me:
			c.takeShard(ctx, i, name)
		}
	}
}

func (c *Coordinator) takeShard(ctx context.Context, i int, name string) {
	l, ok, err := c.node.Acquire(ctx, name, c.ttl)
	if err != nil {
		c.log.Warn("cluster.acquire_failed", zap.String("lease", name), zap.Error(err))
		return
	}
	if !ok {
		return // held by a live owner, or its lease has not run out yet
	}
	c.keeper.Hold(l)
	c.discord.add(i, l)
	c.log.Info("cluster.discord_shard_taken", zap.Int("shard", i), zap.Int("count", c.discord.count), zap.Int64("token", l.Token))
}

func (c *Coordinator) releaseShard(ctx context.Context, i int, l cluster.Lease) {
	c.keeper.Drop(l.Name)
	c.discord.remove(l)
	if err := c.node.Release(ctx, l); err != nil {
		c.log.Warn("cluster.release_failed", zap.String("lease", l.Name), zap.Error(err))
		return
	}
	c.log.Info("cluster.discord_shard_handed_over", zap.Int("shard", i))
}

// dropShards stops every shard session this node runs, for a process that
// must serve nothing more (superseded by a newer one under its node id);
// their leases are left to expire, as the newer process may hold them.
func (c *Coordinator) dropShards() {
	if c.discord == nil {
		return
	}
	for _, i := range c.discord.ids() {
		if l, ok := c.discord.holds(i); ok {
			c.keeper.Drop(l.Name)
			c.discord.remove(l)
		}
	}
}

// shardLeaseLost stops the session of a shard whose lease was lost (another
// node may run it now); false if l is not a shard lease.
func (c *Coordinator) shardLeaseLost(l cluster.Lease, err error) bool {
	if !strings.HasPrefix(l.Name, cluster.ShardLeasePrefix) {
		return false
	}
	// The keeper has dropped it already.
	if c.discord != nil && c.discord.remove(l) {
		c.log.Warn("cluster.discord_shard_lost", zap.String("lease", l.Name), zap.Error(err))
	}
	return true
}
