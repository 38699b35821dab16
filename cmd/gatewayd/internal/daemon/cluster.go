package daemon

import (
	"context"

	"github.com/gatewayd/gatewayd/cluster/node"
	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/platforms/telegram"
)

// The daemon's wiring of cluster mode: on PostgreSQL the daemon is a node
// (package cluster/node), which the gateway sees through its lane gate.

// joinCluster puts the daemon in cluster mode when it runs on PostgreSQL.
func (d *daemon) joinCluster(ctx context.Context) error {
	if !d.cfg.Store.Postgres() {
		return nil
	}
	c, err := node.Start(ctx, node.Config{DSN: d.cfg.Store.DSN, NodeID: d.cfg.Cluster.NodeID,
		CodexHome: CodexHome(d.cfg), StateDir: d.cfg.StateDir, LeaseTTL: d.cfg.Cluster.LeaseTTL, Log: d.log})
	if err != nil {
		return err
	}
	if err := c.RegisterMetrics(d.metrics.Registry()); err != nil {
		c.Close()
		return err
	}
	d.cluster = c
	return nil
}

// leaveCluster makes the node leave (node.Coordinator.Close): at once
// once the gateway has drained, and on every way out; the second call does
// nothing.
func (d *daemon) leaveCluster() {
	if d.cluster != nil {
		d.cluster.Close()
	}
}

// pollGate is Telegram's poller election in cluster mode, nil otherwise.
func (d *daemon) pollGate() func(context.Context) (context.Context, telegram.CursorStore, error) {
	if d.cluster == nil {
		return nil
	}
	return d.cluster.PollGate
}

// runCluster starts the cluster loop once the gateway is running (it
// dispatches into the gateway).
func (d *daemon) runCluster(ctx context.Context) {
	c := d.cluster
	if c == nil {
		return
	}
	go func() {
		select {
		case <-d.gateway.Ready():
		case <-ctx.Done():
			return
		}
		c.Run(ctx)
	}()
}

// superseded is closed once another process took over this node id; nil
// (never ready) outside cluster mode.
func (d *daemon) superseded() <-chan struct{} {
	if d.cluster == nil {
		return nil
	}
	return d.cluster.Gone()
}

// ErrSuperseded is the daemon's exit when another process took over its
// node id: a configuration error (exit 2), as at start.
var ErrSuperseded = &config.Error{Key: "cluster.node_id",
	Msg: "another gatewayd process joined the cluster with this node id while this one was paused or cut off; this one stopped (give every node its own id)"}

// shareAnswers tells the API platform of the answers other nodes commit.
func (d *daemon) shareAnswers() {
	if d.cluster != nil {
		d.cluster.SetAnswered(d.api.AnswerRecorded)
	}
}

// discordShardSets is the adapter's shard source when cluster.discord_shards
// is more than 1: in cluster mode the shards this node holds by lease; on
// a single node every shard, each its own session. Nil (one unsharded
// session) otherwise.
func (d *daemon) discordShardSets() <-chan []int {
	n := d.cfg.Cluster.DiscordShards
	if n < 2 || !d.cfg.Discord.Enabled() {
		return nil
	}
	if d.cluster == nil {
		all := make(chan []int, 1)
		ids := make([]int, n)
		for i := range ids {
			ids[i] = i
		}
		all <- ids
		return all
	}
	return d.cluster.DiscordShardSets(n)
}
