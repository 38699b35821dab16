package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// NextChange returns how long, by the database's clock, until the first
// moment a takeover could become possible for this node: another node's
// heartbeat turning older than ttl (it leaves the live set, so placement
// moves its lanes), or one of the leases names, held by another node,
// expiring. ok=false when nothing of the kind lies ahead.
//
// A node that sleeps until then, instead of until its next periodic round,
// takes a dead node's lanes as soon as the database lets it.
func (n *Node) NextChange(ctx context.Context, ttl time.Duration, names []string) (time.Duration, bool, error) {
	if ttl <= 0 {
		return 0, false, fmt.Errorf("cluster: next change: ttl must be positive, got %v", ttl)
	}
	if names == nil {
		names = []string{} // NULL would make ANY() match nothing, but say so
	}
	var left sql.NullFloat64
	err := n.db.QueryRowContext(ctx, `WITH now AS (SELECT cluster_now() AS t)
		SELECT EXTRACT(EPOCH FROM min(at) - (SELECT t FROM now))::float8 FROM (
			SELECT heartbeat_at + $2 * interval '1 microsecond' AS at FROM cluster_nodes
				WHERE node_id <> $1
			UNION ALL
			SELECT expires_at FROM cluster_leases
				WHERE name = ANY($3) AND holder <> $1 AND holder <> ''
		) s WHERE at > (SELECT t FROM now)`, n.id, ttl.Microseconds(), names).Scan(&left)
	if err != nil {
		return 0, false, fmt.Errorf("cluster: next change: %w", err)
	}
	if !left.Valid {
		return 0, false, nil
	}
	return seconds(left.Float64), true, nil
}
