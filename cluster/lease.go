package cluster

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// DefaultLeaseTTL is cluster.lease_ttl's default: how long a silent owner
// keeps a lane before another node may take it.
const DefaultLeaseTTL = 15 * time.Second

// ErrLeaseLost means another holder has taken the lease (or it was
// released): the former holder must step down and stop writing.
var ErrLeaseLost = errors.New("cluster: lease lost to another holder")

// Lease is a held lease. Token grows on every takeover, so a write that
// carries it (Fence) is refused once anyone has taken the lease since.
type Lease struct {
	Name   string
	Holder string
	Token  int64
}

// Acquire takes the lease name for ttl if it is free, released or expired,
// and reports ok=false if someone holds it, this node included: a node that
// lost track of its lease (a restart) waits for the expiry and takes it with
// a new token, so anything its old self still has in flight is fenced off.
// The one exception is a lease of the dead predecessor Join found: that is
// taken at once, with a new token all the same.
func (n *Node) Acquire(ctx context.Context, name string, ttl time.Duration) (Lease, bool, error) {
	if err := checkLeaseArgs(name, ttl); err != nil {
		return Lease{}, false, err
	}
	// One statement: the conflicting row is locked and the WHERE evaluated
	// again on its newest version, so of racing nodes exactly one wins.
	var token int64
	err := n.db.QueryRowContext(ctx, `INSERT INTO cluster_leases AS l (name, holder, token, acquired_at, expires_at, incarnation)
		VALUES ($1, $2, 1, cluster_now(), cluster_now() + $3 * interval '1 microsecond', $4)
		ON CONFLICT (name) DO UPDATE
			SET holder = EXCLUDED.holder, token = l.token + 1, incarnation = EXCLUDED.incarnation,
				acquired_at = EXCLUDED.acquired_at, expires_at = EXCLUDED.expires_at
			WHERE l.holder = '' OR l.expires_at <= cluster_now()
				OR ($5 <> '' AND l.holder = EXCLUDED.holder AND l.incarnation = $5)
		RETURNING token`, name, n.id, ttl.Microseconds(), n.incarnation, n.reclaimable()).Scan(&token)
	if errors.Is(err, sql.ErrNoRows) {
		return Lease{}, false, nil
	}
	if err != nil {
		return Lease{}, false, fmt.Errorf("cluster: acquire %s: %w", name, err)
	}
	return Lease{Name: name, Holder: n.id, Token: token}, true, nil
}

// Renew extends a lease this node holds to ttl from now. It returns
// ErrLeaseLost when the lease has been taken or released since (or was
// never this node's); a lease that expired without anyone taking it is
// still this holder's, as no newer token exists.
func (n *Node) Renew(ctx context.Context, l Lease, ttl time.Duration) error {
	if err := checkLeaseArgs(l.Name, ttl); err != nil {
		return err
	}
	res, err := n.db.ExecContext(ctx, `UPDATE cluster_leases
		SET expires_at = cluster_now() + $4 * interval '1 microsecond'
		WHERE name = $1 AND holder = $2 AND token = $3`, l.Name, n.id, l.Token, ttl.Microseconds())
	if err != nil {
		return fmt.Errorf("cluster: renew %s: %w", l.Name, err)
	}
	return leaseChanged(res, l)
}

// Release gives the lease up at once, so the next owner need not wait for
// the TTL. The row stays, keeping the token, so tokens never go back. A
// lease already lost returns ErrLeaseLost.
func (n *Node) Release(ctx context.Context, l Lease) error {
	res, err := n.db.ExecContext(ctx, `UPDATE cluster_leases
		SET holder = '', expires_at = cluster_now()
		WHERE name = $1 AND holder = $2 AND token = $3`, l.Name, n.id, l.Token)
	if err != nil {
		return fmt.Errorf("cluster: release %s: %w", l.Name, err)
	}
	return leaseChanged(res, l)
}

func leaseChanged(res sql.Result, l Lease) error {
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("cluster: lease %s: %w", l.Name, err)
	}
	if n == 0 {
		return fmt.Errorf("%w: %s token %d", ErrLeaseLost, l.Name, l.Token)
	}
	return nil
}

func checkLeaseArgs(name string, ttl time.Duration) error {
	if name == "" {
		return errors.New("cluster: lease name must not be empty")
	}
	if ttl < time.Millisecond {
		return fmt.Errorf("cluster: lease %s: ttl must be at least 1ms, got %v", name, ttl)
	}
	return nil
}
