package daemon

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/cluster/node"
	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/metrics"
	"github.com/gatewayd/gatewayd/platforms/api"
	"github.com/gatewayd/gatewayd/platforms/telegram"
)

// The daemon's wiring of cluster mode: on PostgreSQL the daemon is a node
// (package cluster/node), which the gateway sees through its lane gate.

// clusterMember is the daemon's membership of the cluster: its node in
// cluster mode, nothing on SQLite.
type clusterMember struct {
	node *node.Coordinator // nil: not in cluster mode
}

// join puts the daemon in cluster mode when it runs on PostgreSQL.
func (m *clusterMember) join(ctx context.Context, cfg *config.Config, log *zap.Logger, mm *metrics.Metrics) error {
	if !cfg.Store.Postgres() {
		return nil
	}
	c, err := node.Start(ctx, node.Config{DSN: cfg.Store.DSN, NodeID: cfg.Cluster.NodeID,
		CodexHome: CodexHome(cfg), StateDir: cfg.StateDir, LeaseTTL: cfg.Cluster.LeaseTTL, Log: log})
	if err != nil {
		return err
	}
	if err := c.RegisterMetrics(mm.Registry()); err != nil {
		c.Close()
		return err
	}
	m.node = c
	return nil
}

// leave makes the node leave (node.Coordinator.Close): at once once the
// gateway has drained, and on every way out; the second call does nothing.
func (m *clusterMember) leave() {
	if m.node != nil {
		m.node.Close()
	}
}

// pollGate is Telegram's poller election in cluster mode, nil otherwise.
func (m *clusterMember) pollGate() func(context.Context) (context.Context, telegram.CursorStore, error) {
	if m.node == nil {
		return nil
	}
	return m.node.PollGate
}

// run starts the cluster loop once the gateway is running (ready is
// closed; the loop dispatches into the gateway).
func (m *clusterMember) run(ctx context.Context, ready <-chan struct{}) {
	c := m.node
	if c == nil {
		return
	}
	go func() {
		select {
		case <-ready:
		case <-ctx.Done():
			return
		}
		c.Run(ctx)
	}()
}

// superseded is closed once another process took over this node id; nil
// (never ready) outside cluster mode.
func (m *clusterMember) superseded() <-chan struct{} {
	if m.node == nil {
		return nil
	}
	return m.node.Gone()
}

// ErrSuperseded is the daemon's exit when another process took over its
// node id: a configuration error (exit 2), as at start.
var ErrSuperseded = &config.Error{Key: "cluster.node_id",
	Msg: "another gatewayd process joined the cluster with this node id while this one was paused or cut off; this one stopped (give every node its own id)"}

// shareAnswers tells the API platform of the answers other nodes commit
// and the events they stream, and runs the calls they make to it and to
// the gateway (a button pressed on another node).
func (m *clusterMember) shareAnswers(p *api.Platform, gw *gateway.Gateway) {
	if m.node != nil {
		m.node.SetAnswered(p.AnswerRecorded)
		m.node.SetStreamed(p.StreamNotified)
		m.node.HandleCalls(api.CallPrefix, p.ServeCall)
		m.node.HandleCalls(gateway.CallPrefix, gw.ServeCall)
	}
}

// relay is the API platform's relay between nodes; nil outside cluster
// mode.
func (m *clusterMember) relay() api.Relay {
	if m.node == nil {
		return nil
	}
	return apiRelay{m.node}
}

// apiRelay is the node's relay as the API platform sees it.
type apiRelay struct{ c *node.Coordinator }

func (r apiRelay) Offer(ev api.RelayEvent) { r.c.Offer(cluster.StreamEvent(ev)) }

func (r apiRelay) Position(ctx context.Context) (int64, error) { return r.c.StreamPosition(ctx) }

func (r apiRelay) Since(ctx context.Context, sessionKey string, after int64, limit int) ([]api.RelayEvent, error) {
	evs, err := r.c.StreamSince(ctx, sessionKey, after, limit)
	out := make([]api.RelayEvent, len(evs))
	for i, ev := range evs {
		out[i] = api.RelayEvent(ev)
	}
	return out, err
}

func (r apiRelay) Flush(ctx context.Context) { r.c.FlushStream(ctx) }

func (r apiRelay) Serves(sessionKey string) bool { return r.c.Serves(sessionKey) }

func (r apiRelay) CallOwner(ctx context.Context, sessionKey, op string, body []byte) ([]byte, error) {
	reply, err := r.c.CallOwner(ctx, sessionKey, op, body)
	if errors.Is(err, cluster.ErrNoOwner) {
		return nil, api.ErrNoRemoteOwner
	}
	return reply, err
}

// discordShardSets is the adapter's shard source when cluster.discord_shards
// is more than 1: in cluster mode the shards this node holds by lease; on
// a single node every shard, each its own session. Nil (one unsharded
// session) otherwise.
func (m *clusterMember) discordShardSets(cfg *config.Config) <-chan []int {
	n := cfg.Cluster.DiscordShards
	if n < 2 || !cfg.Discord.Enabled() {
		return nil
	}
	if m.node == nil {
		all := make(chan []int, 1)
		ids := make([]int, n)
		for i := range ids {
			ids[i] = i
		}
		all <- ids
		return all
	}
	return m.node.DiscordShardSets(n)
}
