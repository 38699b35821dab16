// Package node is this process's part in a gatewayd cluster: on
// PostgreSQL every gatewayd is a node. A lane is served by the node holding
// lease "lane:<session key>", which rendezvous placement over the live
// nodes picks; Telegram is polled by the holder of "telegram:poller" and
// each Discord shard by the holder of its lease. Leases, not the store's
// ownership lock, say who writes.
//
// The lease primitives are package cluster; this package coordinates them
// with the gateway, which sees it only through gateway.LaneGate.
package node

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/store"
)

const (
	inboxChannel  = "gatewayd_inbox" // NOTIFY payload: the session key of a recorded row
	clusterCallTO = 10 * time.Second
)

// Coordinator is this process's part in the cluster. It implements
// gateway.LaneGate and the store's fence hooks.
type Coordinator struct {
	log       *zap.Logger
	ttl       time.Duration
	pgcfg     *pgx.ConnConfig // for the LISTEN connection
	codexHome string
	db        *sql.DB
	node      *cluster.Node
	rollouts  *cluster.Rollouts
	keeper    *cluster.Keeper
	state     *nodeState // the state_dir lock; nil without a state_dir
	now       Clock
	st        Store   // set once the store is open
	gw        Gateway // set once the gateway is built

	mu     sync.Mutex
	owned  map[string]heldLease     // lanes served now
	lost   map[string]cluster.Lease // lanes stepped down from: writes still carry the old token, so the database refuses them
	laneMu map[string]*sync.Mutex   // serialises claims, recovery and shipping per lane
	// unrecovered are lanes taken whose recovery failed (the database
	// away): retried every round while the lease is held, and no new row
	// of theirs is claimed before it succeeds (recover.go).
	unrecovered map[string]bool
	// handOverTries counts the rounds an idle lane placed elsewhere was
	// kept because its rollout was not shipped through its last committed
	// turn yet (handover.go).
	handOverTries map[string]int
	poller        func() // ends the poller's context when its lease is lost
	// superseded: a newer process joined as this node id; serve nothing.
	superseded bool
	// gone is closed when this process is superseded: the daemon stops.
	gone chan struct{}

	discord *discordShards // Discord shards held; nil unless cluster.discord_shards > 1

	wake      chan struct{}
	closeOnce sync.Once
	// answered is told the message id of every answer a node committed
	// (the API platform's AnswerRecorded); set before Run.
	answered func(messageID string)
	// The relay (relay.go): what this node streams to other nodes'
	// requests, and the calls they make to its lanes.
	stream       *cluster.Stream
	streamQ      *streamQueue
	streamed     func(sessionKey string) // the API platform's StreamNotified; set before Run
	callHandlers map[string]CallHandler  // by op prefix; set before Run
	callsWake    chan struct{}           // capacity 1: calls may wait (runCalls)
	replies      map[int64]chan struct{} // calls this node made, waiting for their reply
	prunedAt     time.Time

	takeovers prometheus.Counter   // lanes taken by this node
	shipLag   prometheus.Histogram // turn committed → its rollout tail in the database
}

type heldLease struct {
	lease   cluster.Lease
	renewed time.Time // monotonic: the lease lasts at least ttl from here
	// lapsed: not renewed for a TTL (the database out of reach); not
	// served, but kept with its work until the keeper renews it or finds
	// it taken (lapse.go).
	lapsed bool
}

// Config is what a node is started with.
type Config struct {
	DSN       string        // store.dsn: the shared PostgreSQL database
	NodeID    string        // cluster.node_id
	CodexHome string        // the app-server's CODEX_HOME: rollouts are shipped from and restored into it
	StateDir  string        // state_dir, where the predecessor is recorded; "" records none
	LeaseTTL  time.Duration // cluster.lease_ttl
	Log       *zap.Logger
	Now       Clock // nil: time.Now
}

// Start joins the cluster: migrations, a first heartbeat and the lease
// keeper. A node id another live process runs as is a *config.Error on
// cluster.node_id.
func Start(ctx context.Context, cfg Config) (*Coordinator, error) {
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	db, pgcfg, err := openDB(cfg.DSN)
	if err != nil {
		return nil, err
	}
	var (
		state    *nodeState
		previous string
	)
	if cfg.StateDir != "" {
		if state, previous, err = lockNodeState(cfg.StateDir); err != nil {
			db.Close()
			return nil, err
		}
	}
	c := &Coordinator{log: cfg.Log.Named("cluster"), ttl: cfg.LeaseTTL, pgcfg: pgcfg, codexHome: cfg.CodexHome, db: db,
		rollouts: cluster.NewRollouts(db), owned: map[string]heldLease{}, lost: map[string]cluster.Lease{},
		unrecovered: map[string]bool{}, handOverTries: map[string]int{},
		laneMu: map[string]*sync.Mutex{}, now: now, streamQ: newStreamQueue(), replies: map[int64]chan struct{}{},
		callHandlers: map[string]CallHandler{}, callsWake: make(chan struct{}, 1), wake: make(chan struct{}, 1), gone: make(chan struct{}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "gatewayd", Subsystem: "cluster",
			Name: "takeovers_total", Help: "Lanes this node took over (lease acquired)."}),
		shipLag: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "gatewayd", Subsystem: "cluster",
			Name: "ship_lag_seconds", Help: "From a turn's commit to its rollout tail committed in the database.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)}),
	}
	c.state = state
	if err := c.join(ctx, cfg.NodeID, previous); err != nil {
		state.close()
		db.Close()
		return nil, err
	}
	c.stream = cluster.NewStream(db, c.node.ID())
	return c, nil
}

// join writes this process's first heartbeat as nodeID's incarnation: it
// is refused while another live process runs as nodeID, and takes back at
// once the leases of previous, the dead process that last ran on this
// state_dir.
func (c *Coordinator) join(ctx context.Context, nodeID, previous string) error {
	if err := cluster.Migrate(ctx, c.db); err != nil {
		return fmt.Errorf("gatewayd: cluster: %w", err)
	}
	node, err := cluster.NewNode(c.db, nodeID)
	if err != nil {
		return fmt.Errorf("gatewayd: cluster: %w", err)
	}
	c.node = node
	joined, err := c.joinOnce(ctx, previous)
	if errors.Is(err, cluster.ErrNodeIDInUse) {
		return &config.Error{Key: "cluster.node_id", Msg: fmt.Sprintf(
			"%q is in use by another running gatewayd (%v); give every node its own cluster.node_id", nodeID, err)}
	}
	if err != nil {
		return fmt.Errorf("gatewayd: cluster: %w", err)
	}
	if c.state != nil {
		if err := c.state.record(node.Incarnation()); err != nil {
			return err
		}
	}
	c.keeper, err = node.StartKeeper(cluster.KeeperOptions{TTL: c.ttl, OnLost: c.leaseLost, OnLapse: c.leaseLapsed,
		OnRenew: c.renewed})
	if err != nil {
		return fmt.Errorf("gatewayd: cluster: %w", err)
	}
	c.log.Info("cluster.joined", zap.String("node", nodeID), zap.Duration("lease_ttl", c.ttl),
		zap.Bool("reclaims_predecessor", joined.Reclaimed != ""))
	return nil
}

// joinOnce joins as the node's only live process. A fresh heartbeat under
// the id from a process this state_dir does not know as its dead
// predecessor may be a live twin or one that died just now (a crash with
// the state_dir lost, or from a build that kept no record): it is watched
// until it moves on (a twin: ErrNodeIDInUse) or goes stale (dead: join,
// its leases left to expire), at most about one TTL.
func (c *Coordinator) joinOnce(ctx context.Context, previous string) (cluster.Joined, error) {
	var first *cluster.NodeIDInUseError
	for {
		joined, err := c.node.Join(ctx, c.ttl, previous)
		var busy *cluster.NodeIDInUseError
		if !errors.As(err, &busy) {
			return joined, err
		}
		if first == nil {
			first = busy
			c.log.Warn("cluster.node_id_busy", zap.String("node", c.node.ID()), zap.Duration("heartbeat_age", busy.HeartbeatAge))
		} else if busy.Incarnation != first.Incarnation || busy.HeartbeatAt.After(first.HeartbeatAt) {
			return cluster.Joined{}, busy // it heartbeats: alive
		}
		select {
		case <-ctx.Done():
			return cluster.Joined{}, ctx.Err()
		case <-time.After(c.ttl / 8):
		}
	}
}

// OpenDB opens a pool on dsn for the cluster's own queries, as `gatewayd
// cluster status` and doctor read them. A DSN pgx cannot parse is reported
// without being echoed (it may hold a password).
func OpenDB(dsn string) (*sql.DB, error) {
	db, _, err := openDB(dsn)
	return db, err
}

func openDB(dsn string) (*sql.DB, *pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, nil, errors.New("gatewayd: cluster: store.dsn is not a valid PostgreSQL DSN")
	}
	return stdlib.OpenDB(*cfg), cfg, nil
}

// StoreOptions are the store's cluster hooks: the lease each lane's writes
// carry, and what to do when the database refuses one.
func (c *Coordinator) StoreOptions() store.ClusterOptions {
	return store.ClusterOptions{Shared: true, Fence: c.fence, OnFenced: c.fenced}
}

// Attach gives the node the store and the gateway it serves lanes of, once
// both are built (the store is opened with StoreOptions). Call it before
// Run and before the gateway runs.
func (c *Coordinator) Attach(st Store, gw Gateway) {
	c.st, c.gw = st, gw
}

// Gone is closed once another process took over this node id: the daemon
// stops.
func (c *Coordinator) Gone() <-chan struct{} { return c.gone }

// Close leaves the cluster (after the gateway has stopped): it stops
// renewing, releases the leases and makes this node's heartbeat a TTL
// old, then wakes the other nodes, so they place and take its lanes at
// once rather than a TTL after its last heartbeat. Later calls do nothing.
func (c *Coordinator) Close() {
	c.closeOnce.Do(c.leave)
}

func (c *Coordinator) leave() {
	c.keeper.Stop()
	c.shipBeforeLeaving() // the leases are still this node's: fenced writes pass
	ctx, cancel := context.WithTimeout(context.Background(), clusterCallTO)
	defer cancel()
	held := c.keeper.Held()
	if err := c.node.Leave(ctx, held, c.ttl); err != nil {
		c.log.Warn("cluster.leave_failed", zap.Error(err))
		c.releaseEach(ctx, held)
	} else {
		c.announceLeft(ctx, len(held))
	}
	c.db.Close()
	c.state.close()
}

// releaseEach gives the leases up one by one, as before Leave: the other
// nodes take the lanes once this node's heartbeat is a TTL old.
func (c *Coordinator) releaseEach(ctx context.Context, held []cluster.Lease) {
	for _, l := range held {
		if err := c.node.Release(ctx, l); err != nil && !errors.Is(err, cluster.ErrLeaseLost) {
			c.log.Warn("cluster.release_failed", zap.String("lease", l.Name), zap.Error(err))
		}
	}
}

// announceLeft wakes every node's loop (they listen on the inbox channel),
// which then finds this node gone and its lanes free.
func (c *Coordinator) announceLeft(ctx context.Context, released int) {
	if _, err := c.db.ExecContext(ctx, "SELECT pg_notify($1, '')", inboxChannel); err != nil {
		c.log.Warn("cluster.notify_failed", zap.Error(err))
	}
	c.log.Info("cluster.left", zap.String("node", c.node.ID()), zap.Int("leases_released", released))
}
