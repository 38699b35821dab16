package cluster

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// NodeStatus is one node's row, with ages by the database's clock.
type NodeStatus struct {
	ID            string
	HeartbeatAge  time.Duration // since its last heartbeat
	Up            time.Duration // since its process started
	Live          bool          // heartbeat younger than the TTL asked for
	LanesHeld     int           // unexpired lane leases it holds
	OtherLeases   []string      // unexpired non-lane leases (telegram:poller)
	ExpiredLeases int           // leases it still names but that ran out
}

// LeaseStatus is one lease row.
type LeaseStatus struct {
	Name, Holder string
	Token        int64
	ExpiresIn    time.Duration // negative: expired
}

// Status is the cluster as the database sees it.
type Status struct {
	Nodes  []NodeStatus
	Leases []LeaseStatus
}

// ReadStatus reads every node and lease; a node is live when its heartbeat
// is younger than ttl. Lane leases are named "lane:<session key>".
func ReadStatus(ctx context.Context, db *sql.DB, ttl time.Duration) (Status, error) {
	var st Status
	rows, err := db.QueryContext(ctx, `SELECT node_id,
		EXTRACT(EPOCH FROM cluster_now() - heartbeat_at), EXTRACT(EPOCH FROM cluster_now() - started_at)
		FROM cluster_nodes ORDER BY node_id`)
	if err != nil {
		return Status{}, fmt.Errorf("cluster: status: %w", err)
	}
	defer rows.Close()
	index := map[string]int{}
	for rows.Next() {
		var n NodeStatus
		var hb, up float64
		if err := rows.Scan(&n.ID, &hb, &up); err != nil {
			return Status{}, fmt.Errorf("cluster: status: %w", err)
		}
		n.HeartbeatAge, n.Up = seconds(hb), seconds(up)
		n.Live = n.HeartbeatAge < ttl
		index[n.ID] = len(st.Nodes)
		st.Nodes = append(st.Nodes, n)
	}
	if err := rows.Err(); err != nil {
		return Status{}, fmt.Errorf("cluster: status: %w", err)
	}
	if err := readLeases(ctx, db, &st, index); err != nil {
		return Status{}, err
	}
	return st, nil
}

func readLeases(ctx context.Context, db *sql.DB, st *Status, index map[string]int) error {
	rows, err := db.QueryContext(ctx, `SELECT name, holder, token, EXTRACT(EPOCH FROM expires_at - cluster_now())
		FROM cluster_leases WHERE holder <> '' ORDER BY name`)
	if err != nil {
		return fmt.Errorf("cluster: status: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var l LeaseStatus
		var left float64
		if err := rows.Scan(&l.Name, &l.Holder, &l.Token, &left); err != nil {
			return fmt.Errorf("cluster: status: %w", err)
		}
		l.ExpiresIn = seconds(left)
		st.Leases = append(st.Leases, l)
		i, ok := index[l.Holder]
		if !ok {
			continue
		}
		n := &st.Nodes[i]
		switch {
		case l.ExpiresIn <= 0:
			n.ExpiredLeases++
		case len(l.Name) > len(LanePrefix) && l.Name[:len(LanePrefix)] == LanePrefix:
			n.LanesHeld++
		default:
			n.OtherLeases = append(n.OtherLeases, l.Name)
		}
	}
	return rows.Err()
}

// LanePrefix starts the name of a lane's lease: "lane:<session key>".
const LanePrefix = "lane:"

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }
