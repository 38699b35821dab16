package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/telegram"
	"github.com/gatewayd/gatewayd/store"
)

// Cluster mode (issue 15): on PostgreSQL every gatewayd is a node. A lane is
// served by the node holding lease "lane:<session key>", which rendezvous
// placement over the live nodes picks; Telegram is polled by the holder of
// "telegram:poller". Leases, not the store's ownership lock, say who writes.
const (
	pollerLease   = "telegram:poller"
	inboxChannel  = "gatewayd_inbox" // NOTIFY payload: the session key of a recorded row
	clusterCallTO = 10 * time.Second
)

// clusterNode is this process's part in the cluster. It implements
// gateway.LaneGate and the store's fence hooks.
type clusterNode struct {
	log       *zap.Logger
	ttl       time.Duration
	pgcfg     *pgx.ConnConfig // for the LISTEN connection
	codexHome string
	db        *sql.DB
	node      *cluster.Node
	rollouts  *cluster.Rollouts
	keeper    *cluster.Keeper
	state     *nodeState       // the state_dir lock; nil without a state_dir
	st        *store.Store     // set once the store is open
	gw        *gateway.Gateway // set once the gateway is built

	mu     sync.Mutex
	owned  map[string]heldLease     // lanes served now
	lost   map[string]cluster.Lease // lanes stepped down from: writes still carry the old token, so the database refuses them
	laneMu map[string]*sync.Mutex   // serialises claims, recovery and shipping per lane
	poller func()                   // ends the poller's context when its lease is lost
	// superseded: a newer process joined as this node id; serve nothing.
	superseded bool
	// gone is closed when this process is superseded: the daemon stops.
	gone chan struct{}

	discord *discordShards // Discord shards held; nil unless cluster.discord_shards > 1

	wake chan struct{}
	// answered is told the message id of every answer a node committed
	// (the API platform's AnswerRecorded); set before run.
	answered func(messageID string)

	takeovers prometheus.Counter   // lanes taken by this node
	shipLag   prometheus.Histogram // turn committed → its rollout tail in the database
}

type heldLease struct {
	lease   cluster.Lease
	renewed time.Time // monotonic: the lease lasts at least ttl from here
}

// startCluster joins the cluster on dsn: migrations, a first heartbeat and
// the lease keeper.
func startCluster(ctx context.Context, dsn, nodeID, codexHome, stateDir string, ttl time.Duration, log *zap.Logger) (*clusterNode, error) {
	db, pgcfg, err := openClusterDB(dsn)
	if err != nil {
		return nil, err
	}
	var (
		state    *nodeState
		previous string
	)
	if stateDir != "" {
		if state, previous, err = lockNodeState(stateDir); err != nil {
			db.Close()
			return nil, err
		}
	}
	c := &clusterNode{log: log.Named("cluster"), ttl: ttl, pgcfg: pgcfg, codexHome: codexHome, db: db,
		rollouts: cluster.NewRollouts(db), owned: map[string]heldLease{}, lost: map[string]cluster.Lease{},
		laneMu: map[string]*sync.Mutex{}, wake: make(chan struct{}, 1), gone: make(chan struct{}),
		takeovers: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "gatewayd", Subsystem: "cluster",
			Name: "takeovers_total", Help: "Lanes this node took over (lease acquired)."}),
		shipLag: prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: "gatewayd", Subsystem: "cluster",
			Name: "ship_lag_seconds", Help: "From a turn's commit to its rollout tail committed in the database.",
			Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)}),
	}
	c.state = state
	if err := c.join(ctx, nodeID, previous); err != nil {
		state.close()
		db.Close()
		return nil, err
	}
	return c, nil
}

// join writes this process's first heartbeat as nodeID's incarnation: it
// is refused while another live process runs as nodeID, and takes back at
// once the leases of previous, the dead process that last ran on this
// state_dir.
func (c *clusterNode) join(ctx context.Context, nodeID, previous string) error {
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
	c.keeper, err = node.StartKeeper(cluster.KeeperOptions{TTL: c.ttl, OnLost: c.leaseLost, OnRenew: c.renewed})
	if err != nil {
		return fmt.Errorf("gatewayd: cluster: %w", err)
	}
	c.log.Info("cluster.joined", zap.String("node", nodeID), zap.Duration("lease_ttl", c.ttl),
		zap.Bool("reclaims_predecessor", joined.Reclaimed != ""))
	return nil
}

// openClusterDB opens a pool on dsn for the cluster's own queries. A DSN
// pgx cannot parse is reported without being echoed (it may hold a
// password).
func openClusterDB(dsn string) (*sql.DB, *pgx.ConnConfig, error) {
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		return nil, nil, errors.New("gatewayd: cluster: store.dsn is not a valid PostgreSQL DSN")
	}
	return stdlib.OpenDB(*cfg), cfg, nil
}

// storeOptions are the store's cluster hooks.
func (c *clusterNode) storeOptions() store.ClusterOptions {
	return store.ClusterOptions{Shared: true, Fence: c.fence, OnFenced: c.fenced}
}

// close stops renewing and releases the leases, so the other nodes take
// the lanes at once rather than after the TTL. The gateway has stopped.
func (c *clusterNode) close() {
	c.keeper.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), clusterCallTO)
	defer cancel()
	for _, l := range c.keeper.Held() {
		if err := c.node.Release(ctx, l); err != nil {
			c.log.Warn("cluster.release_failed", zap.String("lease", l.Name), zap.Error(err))
		}
	}
	c.db.Close()
	c.state.close()
}

// fence is the lease a lane's writes carry: the current one, or the one
// lost, which the database refuses.
func (c *clusterNode) fence(key string) (string, int64, bool) {
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
func (c *clusterNode) fenced(key string, err error) {
	c.log.Warn("cluster.write_fenced", zap.String("lane", key), zap.Error(err))
	go c.stepDown(key, "write refused by the fence")
}

func (c *clusterNode) leaseLost(l cluster.Lease, err error) {
	if c.shardLeaseLost(l, err) {
		return
	}
	if l.Name == pollerLease {
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

func (c *clusterNode) renewed(l cluster.Lease) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := strings.TrimPrefix(l.Name, cluster.LanePrefix)
	if h, ok := c.owned[key]; ok && h.lease == l {
		c.owned[key] = heldLease{lease: l, renewed: time.Now()}
	}
}

// stepDown stops serving the lane: no delivery, no claims, the agent
// dropped; its writes from now on are refused by the database.
func (c *clusterNode) stepDown(key, why string) {
	c.mu.Lock()
	h, ok := c.owned[key]
	if ok {
		delete(c.owned, key)
		c.lost[key] = h.lease
	}
	c.mu.Unlock()
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
func (c *clusterNode) Serves(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	h, ok := c.owned[key]
	return ok && time.Since(h.renewed) < c.ttl
}

// Recorded is gateway.LaneGate: wake this node's loop and, through
// NOTIFY, every other node's.
func (c *clusterNode) Recorded(key string) {
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
func (c *clusterNode) TurnCommitted(key, threadID string) {
	if threadID == "" {
		return
	}
	go c.ship(key, threadID, time.Now())
}

func (c *clusterNode) ship(key, threadID string, committed time.Time) {
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

func (c *clusterNode) laneLock(key string) *sync.Mutex {
	c.mu.Lock()
	defer c.mu.Unlock()
	mu, ok := c.laneMu[key]
	if !ok {
		mu = &sync.Mutex{}
		c.laneMu[key] = mu
	}
	return mu
}

func (c *clusterNode) poke() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// run heartbeats, takes the lanes placed here and claims their inbox rows
// until ctx ends: at every wake (a row recorded here or NOTIFYed by another
// node), at most ttl/4 apart (heartbeats), and as soon as a takeover may
// have become possible (nextRound), so a dead node's lanes move the moment
// the database lets them rather than at the next ttl/4 tick.
func (c *clusterNode) run(ctx context.Context) {
	go c.listen(ctx)
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
func (c *clusterNode) nextRound(ctx context.Context, blocked []string) time.Duration {
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
func (c *clusterNode) round(ctx context.Context) []string {
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
	c.handOver(ctx, keys, live)
	c.balanceShards(ctx, live)
	return blocked
}

// joinOnce joins as the node's only live process. A fresh heartbeat under
// the id from a process this state_dir does not know as its dead
// predecessor may be a live twin or one that died just now (a crash with
// the state_dir lost, or from a build that kept no record): it is watched
// until it moves on (a twin: ErrNodeIDInUse) or goes stale (dead: join,
// its leases left to expire), at most about one TTL.
func (c *clusterNode) joinOnce(ctx context.Context, previous string) (cluster.Joined, error) {
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

// supersede makes this process inert: another process runs as this node
// id now (this one was paused past its heartbeat and another joined). It
// steps down from every lane and the poller and takes nothing more; its
// writes carry tokens the database already refuses. Closing gone then
// stops the daemon: an inert process left running would only hide from
// the operator that two machines share a node id.
func (c *clusterNode) supersede(err error) {
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
	c.keeper.Drop(pollerLease)
	c.dropShards()
	for _, key := range owned {
		c.stepDown(key, "node id taken over by a newer process")
	}
}

// superseded is closed once another process took over this node id; nil
// (never ready) outside cluster mode.
func (d *daemon) superseded() <-chan struct{} {
	if d.cluster == nil {
		return nil
	}
	return d.cluster.gone
}

// errSuperseded is the daemon's exit when another process took over its
// node id: a configuration error (exit 2), as at start.
var errSuperseded = &config.Error{Key: "cluster.node_id",
	Msg: "another gatewayd process joined the cluster with this node id while this one was paused or cut off; this one stopped (give every node its own id)"}

func (c *clusterNode) isSuperseded() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.superseded
}

// handOver releases the idle lanes that placement now puts on another live
// node (one that joined), so about 1/N of the lanes move to a new node. A
// lane with work in the database (a row to run, a turn journaled, a reply
// to send) or in memory stays until it is idle. A node that does not see
// itself live (its heartbeat late) hands nothing over.
func (c *clusterNode) handOver(ctx context.Context, busy []string, live []string) {
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

func (c *clusterNode) release(ctx context.Context, key string) {
	mu := c.laneLock(key)
	mu.Lock()
	defer mu.Unlock()
	if !c.gw.LaneIdle(key) {
		return
	}
	c.mu.Lock()
	h, ok := c.owned[key]
	if ok {
		delete(c.owned, key)
		c.lost[key] = h.lease
	}
	c.mu.Unlock()
	if !ok {
		return
	}
	c.keeper.Drop(h.lease.Name)
	c.gw.StepDown(ctx, key)
	if err := c.node.Release(ctx, h.lease); err != nil {
		c.log.Warn("cluster.release_failed", zap.String("lane", key), zap.Error(err))
		return
	}
	c.log.Info("cluster.lane_handed_over", zap.String("lane", key))
}

// serve claims the lane's new rows if this node owns it, or takes the lane
// if placement puts it here and its lease is free or expired. It returns
// the lease name when the lane is placed here but still held elsewhere.
func (c *clusterNode) serve(ctx context.Context, key string, live []string) (blocked string) {
	mu := c.laneLock(key)
	mu.Lock()
	defer mu.Unlock()
	if c.Serves(key) {
		c.claim(ctx, key)
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
func (c *clusterNode) take(ctx context.Context, key string, l cluster.Lease) {
	c.hold(key, l)
	c.takeovers.Inc()
	c.log.Info("cluster.lane_taken", zap.String("lane", key), zap.Int64("token", l.Token))
	c.restore(ctx, key)
	if _, err := c.st.ClaimInbound(ctx, key); err != nil {
		c.log.Warn("cluster.claim_failed", zap.String("lane", key), zap.Error(err))
	}
	if err := c.gw.RecoverLane(ctx, key); err != nil {
		c.log.Error("cluster.recover_failed", zap.String("lane", key), zap.Error(err))
	}
}

// hold makes l the lease the lane's writes carry and keeps it renewed.
func (c *clusterNode) hold(key string, l cluster.Lease) {
	c.mu.Lock()
	c.owned[key] = heldLease{lease: l, renewed: time.Now()}
	delete(c.lost, key)
	c.mu.Unlock()
	c.keeper.Hold(l)
}

func (c *clusterNode) restore(ctx context.Context, key string) {
	sl, err := c.st.Lane(ctx, key)
	if err != nil || sl.ThreadID == "" {
		return
	}
	res, err := c.rollouts.Restore(ctx, c.codexHome, sl.ThreadID)
	switch {
	case errors.Is(err, cluster.ErrNoRollout):
	case err != nil:
		c.log.Warn("cluster.restore_failed", zap.String("lane", key), zap.String("thread", sl.ThreadID), zap.Error(err))
	default:
		c.log.Info("cluster.restored", zap.String("lane", key), zap.String("thread", sl.ThreadID),
			zap.Int64("bytes", res.Bytes), zap.Bool("written", res.Written))
	}
}

func (c *clusterNode) claim(ctx context.Context, key string) {
	rows, err := c.st.ClaimInbound(ctx, key)
	if err != nil {
		c.log.Warn("cluster.claim_failed", zap.String("lane", key), zap.Error(err))
		return
	}
	c.gw.DispatchClaimed(ctx, rows)
}

// listen wakes the loop on every NOTIFY of a recorded row; the ticker
// covers the time it is reconnecting.
func (c *clusterNode) listen(ctx context.Context) {
	for ctx.Err() == nil {
		if err := c.listenOnce(ctx); err != nil && ctx.Err() == nil {
			c.log.Warn("cluster.listen_failed", zap.Error(err))
			select {
			case <-ctx.Done():
			case <-time.After(c.ttl / 4):
			}
		}
	}
}

func (c *clusterNode) listenOnce(ctx context.Context) error {
	conn, err := pgx.ConnectConfig(ctx, c.pgcfg)
	if err != nil {
		return errors.New("connect failed") // pgx's message may quote the DSN
	}
	defer conn.Close(context.Background())
	for _, ch := range []string{inboxChannel, store.AnswerChannel} {
		if _, err := conn.Exec(ctx, "LISTEN "+ch); err != nil {
			return err
		}
	}
	for {
		n, err := conn.WaitForNotification(ctx)
		if err != nil {
			return err
		}
		c.notified(n.Channel, n.Payload)
	}
}

// pollGate is Telegram's PollGate: wait to hold "telegram:poller", then
// poll until it is lost, writing the offset fenced by the lease.
func (c *clusterNode) pollGate(ctx context.Context) (context.Context, telegram.CursorStore, error) {
	for {
		if c.isSuperseded() {
			<-ctx.Done() // another process is this node now
			return nil, nil, ctx.Err()
		}
		l, ok, err := c.node.Acquire(ctx, pollerLease, c.ttl)
		if err != nil && ctx.Err() == nil {
			c.log.Warn("cluster.poller_acquire_failed", zap.Error(err))
		}
		if ok {
			held, cancel := context.WithCancel(ctx)
			c.mu.Lock()
			c.poller = cancel
			c.mu.Unlock()
			c.keeper.Hold(l)
			c.log.Info("cluster.poller_elected", zap.Int64("token", l.Token))
			return held, pollerCursor{st: c.st, lease: l}, nil
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(c.nextRound(ctx, []string{pollerLease})): // at the poller's expiry, not a tick later
		}
	}
}

// pollerCursor is the Telegram offset store of one poller election: every
// write carries the election's lease, so after another node took the
// lease (this one paused past it, say) the write is refused and the
// poller stops instead of moving the new poller's offset.
type pollerCursor struct {
	st    *store.Store
	lease cluster.Lease
}

func (p pollerCursor) Cursor(ctx context.Context, name string) (string, bool, error) {
	return p.st.Cursor(ctx, name)
}

func (p pollerCursor) SetCursor(ctx context.Context, name, value string) error {
	err := p.st.SetCursorFenced(ctx, name, value, p.lease.Name, p.lease.Token)
	if errors.Is(err, store.ErrFenced) {
		return fmt.Errorf("%w: %w", telegram.ErrNotPoller, err)
	}
	return err
}

// codexHomeOf is the CODEX_HOME the app-server uses: codex.home, else
// $CODEX_HOME, else ~/.codex.
func codexHomeOf(configured string) string {
	if configured != "" {
		return configured
	}
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return h
	}
	home, _ := os.UserHomeDir()
	return filepath.Join(home, ".codex")
}

// joinCluster puts the daemon in cluster mode when it runs on PostgreSQL.
func (d *daemon) joinCluster(ctx context.Context) error {
	if !d.cfg.Store.Postgres() {
		return nil
	}
	c, err := startCluster(ctx, d.cfg.Store.DSN, d.cfg.Cluster.NodeID, codexHomeOf(d.cfg.Codex.Home), d.cfg.StateDir,
		d.cfg.Cluster.LeaseTTL, d.log)
	if err != nil {
		return err
	}
	if err := c.registerMetrics(d.metrics.Registry()); err != nil {
		c.close()
		return err
	}
	d.cluster = c
	return nil
}

func (d *daemon) leaveCluster() {
	if d.cluster != nil {
		d.cluster.close()
	}
}

// pollGate is Telegram's poller election in cluster mode, nil otherwise.
func (d *daemon) pollGate() func(context.Context) (context.Context, telegram.CursorStore, error) {
	if d.cluster == nil {
		return nil
	}
	return d.cluster.pollGate
}

// runCluster hands the gateway its lane gate and starts the cluster loop
// once the gateway is running (it dispatches into the gateway).
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
		c.run(ctx)
	}()
}

// clusterHealth is the "cluster" part of /healthz.
type clusterHealth struct {
	Node      string   `json:"node"`
	LanesHeld int      `json:"lanes_held"`
	Poller    bool     `json:"telegram_poller"`
	Lanes     []string `json:"lanes,omitempty"` // session keys, at most healthLanes
}

const healthLanes = 100

func (c *clusterNode) health() any {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := clusterHealth{Node: c.node.ID(), LanesHeld: len(c.owned), Poller: c.poller != nil}
	for key := range c.owned {
		if len(h.Lanes) == healthLanes {
			break
		}
		h.Lanes = append(h.Lanes, key)
	}
	sort.Strings(h.Lanes)
	return h
}

// registerMetrics adds the cluster's collectors to the daemon's registry:
// leases held, takeovers, ship lag, whether this node polls Telegram.
func (c *clusterNode) registerMetrics(reg *prometheus.Registry) error {
	held := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "gatewayd", Subsystem: "cluster",
		Name: "lane_leases_held", Help: "Lane leases this node holds (lanes it serves)."}, func() float64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		return float64(len(c.owned))
	})
	poller := prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: "gatewayd", Subsystem: "cluster",
		Name: "telegram_poller", Help: "1 while this node is the elected Telegram poller."}, func() float64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.poller != nil {
			return 1
		}
		return 0
	})
	for _, col := range []prometheus.Collector{held, poller, c.takeovers, c.shipLag} {
		if err := reg.Register(col); err != nil {
			return fmt.Errorf("gatewayd: cluster metrics: %w", err)
		}
	}
	return nil
}
