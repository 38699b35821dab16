package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Node is one gatewayd process's membership of the cluster: its heartbeat
// row and the leases it takes. It is safe for concurrent use.
type Node struct {
	db *sql.DB
	id string

	mu      sync.Mutex
	started bool // the first heartbeat of this process has been written
}

// NewNode returns the node id on db. The cluster tables must exist
// (Migrate).
func NewNode(db *sql.DB, id string) (*Node, error) {
	if id == "" {
		return nil, errors.New("cluster: node id must not be empty")
	}
	if db == nil {
		return nil, errors.New("cluster: node needs a database")
	}
	return &Node{db: db, id: id}, nil
}

// ID is the node's id, the holder name on its leases.
func (n *Node) ID() string { return n.id }

// Heartbeat records that the node is alive now (by the database's clock).
// The first heartbeat of a process also resets started_at, so a restarted
// node reads as new.
func (n *Node) Heartbeat(ctx context.Context) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	q := `INSERT INTO cluster_nodes (node_id, started_at, heartbeat_at)
		VALUES ($1, cluster_now(), cluster_now())
		ON CONFLICT (node_id) DO UPDATE SET heartbeat_at = EXCLUDED.heartbeat_at`
	if !n.started {
		q += `, started_at = EXCLUDED.started_at`
	}
	if _, err := n.db.ExecContext(ctx, q, n.id); err != nil {
		return fmt.Errorf("cluster: heartbeat of %s: %w", n.id, err)
	}
	n.started = true
	return nil
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
