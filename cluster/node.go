package cluster

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Node errors callers branch on.
var (
	// ErrNodeIDInUse: Join found another live process heartbeating with
	// this node id. Two processes must never share one.
	ErrNodeIDInUse = errors.New("cluster: node id in use by another live process")
	// ErrSuperseded: a later process joined with this node id (this one
	// was paused or cut off past its heartbeat); this one must stop.
	ErrSuperseded = errors.New("cluster: node id taken over by a newer process")
)

// NodeIDInUseError is Join's refusal: another process's heartbeat under
// the id is younger than the TTL. It matches ErrNodeIDInUse. A caller may
// Join again later: a heartbeat that moved on (HeartbeatAt) proves that
// process alive; one that went stale lets the Join through.
type NodeIDInUseError struct {
	Node, Incarnation string
	HeartbeatAt       time.Time     // by the database's clock
	HeartbeatAge      time.Duration // at the Join
}

func (e *NodeIDInUseError) Error() string {
	return fmt.Sprintf("%v: %s heartbeat %v ago", ErrNodeIDInUse, e.Node, e.HeartbeatAge.Round(time.Millisecond))
}

func (e *NodeIDInUseError) Is(target error) bool { return target == ErrNodeIDInUse }

// Node is one gatewayd process's membership of the cluster: its heartbeat
// row and the leases it takes. It is safe for concurrent use.
type Node struct {
	db          *sql.DB
	id          string
	incarnation string // this process's, random: tells it from an earlier run of the same id

	mu      sync.Mutex
	started bool   // the first heartbeat of this process has been written
	reclaim string // a dead predecessor's incarnation whose leases Acquire takes at once (Join)
	left    bool   // Leave ran: this process heartbeats no more
}

// errLeft is Heartbeat after Leave: the process is on its way out.
var errLeft = errors.New("cluster: node left the cluster")

// NewNode returns the node id on db. The cluster tables must exist
// (Migrate).
func NewNode(db *sql.DB, id string) (*Node, error) {
	if id == "" {
		return nil, errors.New("cluster: node id must not be empty")
	}
	if db == nil {
		return nil, errors.New("cluster: node needs a database")
	}
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return nil, fmt.Errorf("cluster: incarnation id: %w", err)
	}
	return &Node{db: db, id: id, incarnation: hex.EncodeToString(b)}, nil
}

// ID is the node's id, the holder name on its leases.
func (n *Node) ID() string { return n.id }

// Incarnation is this process's incarnation id, to be recorded where the
// next process on the same state finds it (Join's previous).
func (n *Node) Incarnation() string { return n.incarnation }

// Joined says what Join found.
type Joined struct {
	// Reclaimed is the predecessor incarnation whose leases this node now
	// takes back without waiting for them to expire; "" if none.
	Reclaimed string
}

// Join writes this process's first heartbeat as the node id's current
// incarnation. It fails with ErrNodeIDInUse while another process's
// heartbeat under the id is younger than ttl, unless that process is
// previous: an incarnation the caller knows to be dead (it recorded it in
// its state directory under a lock the dead process held). Then its
// leases are this node's to take at once (Acquire), each with a new token,
// so anything it left in flight is still fenced off.
func (n *Node) Join(ctx context.Context, ttl time.Duration, previous string) (Joined, error) {
	if ttl <= 0 {
		return Joined{}, fmt.Errorf("cluster: join: ttl must be positive, got %v", ttl)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	tx, err := n.db.BeginTx(ctx, nil)
	if err != nil {
		return Joined{}, fmt.Errorf("cluster: join %s: %w", n.id, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	joined, err := n.joinTx(ctx, tx, ttl, previous)
	if err != nil {
		return Joined{}, err
	}
	if err := tx.Commit(); err != nil {
		return Joined{}, fmt.Errorf("cluster: join %s: commit: %w", n.id, err)
	}
	n.started, n.reclaim = true, joined.Reclaimed
	return joined, nil
}

func (n *Node) joinTx(ctx context.Context, tx *sql.Tx, ttl time.Duration, previous string) (Joined, error) {
	var (
		current string
		beat    time.Time
		age     float64
	)
	err := tx.QueryRowContext(ctx, `SELECT incarnation, heartbeat_at, EXTRACT(EPOCH FROM cluster_now() - heartbeat_at)::float8
		FROM cluster_nodes WHERE node_id = $1 FOR UPDATE`, n.id).Scan(&current, &beat, &age)
	if errors.Is(err, sql.ErrNoRows) {
		res, err := tx.ExecContext(ctx, `INSERT INTO cluster_nodes (node_id, incarnation, started_at, heartbeat_at)
			VALUES ($1, $2, cluster_now(), cluster_now()) ON CONFLICT (node_id) DO NOTHING`, n.id, n.incarnation)
		if err != nil {
			return Joined{}, fmt.Errorf("cluster: join %s: %w", n.id, err)
		}
		if k, err := res.RowsAffected(); err != nil || k == 0 {
			return Joined{}, &NodeIDInUseError{Node: n.id}
		}
		return Joined{}, nil
	}
	if err != nil {
		return Joined{}, fmt.Errorf("cluster: join %s: %w", n.id, err)
	}
	var joined Joined
	switch fresh := seconds(age) < ttl; {
	case !fresh, current == n.incarnation:
	case previous != "" && current == previous:
		joined.Reclaimed = previous
	default:
		return Joined{}, &NodeIDInUseError{Node: n.id, Incarnation: current, HeartbeatAt: beat, HeartbeatAge: seconds(age)}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE cluster_nodes
		SET incarnation = $2, started_at = cluster_now(), heartbeat_at = cluster_now() WHERE node_id = $1`,
		n.id, n.incarnation); err != nil {
		return Joined{}, fmt.Errorf("cluster: join %s: %w", n.id, err)
	}
	return joined, nil
}

// Heartbeat records that the node is alive now (by the database's clock).
// The first heartbeat of a process without Join also resets started_at, so
// a restarted node reads as new. Once a later process has joined with the
// same id, Heartbeat fails with ErrSuperseded.
func (n *Node) Heartbeat(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.left {
		return fmt.Errorf("heartbeat of %s: %w", n.id, errLeft)
	}
	q := `INSERT INTO cluster_nodes AS c (node_id, incarnation, started_at, heartbeat_at)
		VALUES ($1, $2, cluster_now(), cluster_now())
		ON CONFLICT (node_id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at`
	if !n.started {
		q += `, started_at = EXCLUDED.started_at, incarnation = EXCLUDED.incarnation`
	} else {
		q += ` WHERE c.incarnation = EXCLUDED.incarnation`
	}
	res, err := n.db.ExecContext(ctx, q, n.id, n.incarnation)
	if err != nil {
		return fmt.Errorf("cluster: heartbeat of %s: %w", n.id, err)
	}
	if k, err := res.RowsAffected(); err != nil {
		return fmt.Errorf("cluster: heartbeat of %s: %w", n.id, err)
	} else if k == 0 {
		return fmt.Errorf("%w: %s", ErrSuperseded, n.id)
	}
	n.started = true
	return nil
}

// Leave is a clean stop's last word: in one transaction it releases ls
// (the leases this node still holds; any taken since are left alone) and
// makes this process's heartbeat ttl old, so the other nodes' placement
// drops the node at once, as it would a TTL after a crash, and its lanes
// are free to take, instead of their waiting until its last heartbeat has
// aged a TTL. This process heartbeats no more after it. A later process
// with the node id joins at once (Join finds the heartbeat stale).
func (n *Node) Leave(ctx context.Context, ls []Lease, ttl time.Duration) error {
	if ttl <= 0 {
		return fmt.Errorf("cluster: leave: ttl must be positive, got %v", ttl)
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.left = true
	names, tokens := make([]string, len(ls)), make([]int64, len(ls))
	for i, l := range ls {
		names[i], tokens[i] = l.Name, l.Token
	}
	tx, err := n.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("cluster: leave %s: %w", n.id, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	// The gateway has stopped, so no write of this node holds a fence that
	// several rows locked here could deadlock with.
	if _, err := tx.ExecContext(ctx, `UPDATE cluster_leases l SET holder = '', expires_at = cluster_now()
		FROM unnest($2::text[], $3::bigint[]) AS w(name, token)
		WHERE l.name = w.name AND l.token = w.token AND l.holder = $1`, n.id, names, tokens); err != nil {
		return fmt.Errorf("cluster: leave %s: release: %w", n.id, err)
	}
	// Only this incarnation's row: a newer process of the id is not gone.
	if _, err := tx.ExecContext(ctx, `UPDATE cluster_nodes
		SET heartbeat_at = LEAST(heartbeat_at, cluster_now() - $3 * interval '1 microsecond')
		WHERE node_id = $1 AND incarnation = $2`, n.id, n.incarnation, ttl.Microseconds()); err != nil {
		return fmt.Errorf("cluster: leave %s: heartbeat: %w", n.id, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("cluster: leave %s: commit: %w", n.id, err)
	}
	return nil
}

// beating is the incarnation a renewal records the heartbeat of: this
// process's once it has joined or heartbeaten, until it leaves; "" (no
// heartbeat) otherwise.
func (n *Node) beating() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.started || n.left {
		return ""
	}
	return n.incarnation
}

// reclaimable is the predecessor incarnation Join let this node take the
// leases of, or "".
func (n *Node) reclaimable() string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.reclaim
}

// LiveNodes lists, sorted, the nodes whose last heartbeat is younger than
// ttl by the database's clock.
func (n *Node) LiveNodes(ctx context.Context, ttl time.Duration) ([]string, error) {
	if ttl <= 0 {
		return nil, fmt.Errorf("cluster: live nodes: ttl must be positive, got %v", ttl)
	}
	rows, err := n.db.QueryContext(ctx, `SELECT node_id FROM cluster_nodes
		WHERE heartbeat_at > cluster_now() - $1 * interval '1 microsecond'
		ORDER BY node_id`, ttl.Microseconds())
	if err != nil {
		return nil, fmt.Errorf("cluster: live nodes: %w", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("cluster: live nodes: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cluster: live nodes: %w", err)
	}
	return ids, nil
}
