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
	return n.renewOn(ctx, n.db, l, ttl)
}

// querier is what a renewal runs on: the node's pool, or one connection
// of it (the keeper's).
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

func (n *Node) renewOn(ctx context.Context, q querier, l Lease, ttl time.Duration) error {
	if err := checkLeaseArgs(l.Name, ttl); err != nil {
		return err
	}
	res, err := q.ExecContext(ctx, `UPDATE cluster_leases
		SET expires_at = cluster_now() + $4 * interval '1 microsecond'
		WHERE name = $1 AND holder = $2 AND token = $3`, l.Name, n.id, l.Token, ttl.Microseconds())
	if err != nil {
		return fmt.Errorf("cluster: renew %s: %w", l.Name, err)
	}
	return leaseChanged(res, l)
}

// Renewal is what RenewAll found of each lease it was given.
type Renewal struct {
	Renewed []Lease // extended to the TTL from now
	Lost    []Lease // taken or released since: ErrLeaseLost
}

// renewAllSQL extends, in one statement, every lease of the arrays $2
// (names) and $3 (tokens) that $1 still holds, and reports for each
// whether it was renewed and whether it is still held. A row a write of
// this node has locked (its fence, FOR SHARE until that transaction ends)
// is skipped rather than waited for: a statement locking several rows
// while one write fences several lanes could deadlock with it. The
// "held" column reads the rows as they were when the statement began.
// With an incarnation $5 it also records the node's heartbeat (only that
// process's: a newer one of the id is not overwritten).
const renewAllSQL = `WITH want AS (
		SELECT * FROM unnest($2::text[], $3::bigint[]) AS w(name, token)
	), free AS (
		SELECT l.name FROM cluster_leases l JOIN want w ON w.name = l.name AND w.token = l.token
		WHERE l.holder = $1
		FOR NO KEY UPDATE OF l SKIP LOCKED
	), renewed AS (
		UPDATE cluster_leases l SET expires_at = cluster_now() + $4 * interval '1 microsecond'
		FROM free WHERE l.name = free.name
		RETURNING l.name
	), beat AS (
		UPDATE cluster_nodes SET heartbeat_at = cluster_now()
		WHERE node_id = $1 AND $5 <> '' AND incarnation = $5
	)
	SELECT w.name,
		EXISTS (SELECT 1 FROM renewed r WHERE r.name = w.name),
		EXISTS (SELECT 1 FROM cluster_leases l WHERE l.name = w.name AND l.token = w.token AND l.holder = $1)
	FROM want w`

// RenewAll extends every lease of ls this node still holds to ttl from
// now, in one statement however many there are, so a database that stops
// answering leaves them all unrenewed together instead of one per
// timeout. A lease one of this node's writes holds locked at that moment
// is renewed on its own right after (a second round trip, rarely). On an
// error, the leases in neither list of the Renewal are in doubt.
//
// A node that has joined (or heartbeaten) records its heartbeat in the
// same statement: one under way while the database was frozen runs the
// moment it thaws, so the other nodes see this node live, and leave its
// lanes to it, before their own round could find its heartbeat stale.
func (n *Node) RenewAll(ctx context.Context, ls []Lease, ttl time.Duration) (Renewal, error) {
	return n.renewAllOn(ctx, n.db, ls, ttl)
}

func (n *Node) renewAllOn(ctx context.Context, q querier, ls []Lease, ttl time.Duration) (Renewal, error) {
	var res Renewal
	if len(ls) == 0 {
		return res, nil
	}
	names, tokens := make([]string, len(ls)), make([]int64, len(ls))
	byName := make(map[string]Lease, len(ls))
	for i, l := range ls {
		if err := checkLeaseArgs(l.Name, ttl); err != nil {
			return res, err
		}
		names[i], tokens[i], byName[l.Name] = l.Name, l.Token, l
	}
	busy, err := n.renewAllOnce(ctx, q, names, tokens, ttl, byName, &res)
	if err != nil {
		return res, err
	}
	for _, l := range busy {
		switch err := n.renewOn(ctx, q, l, ttl); {
		case err == nil:
			res.Renewed = append(res.Renewed, l)
		case errors.Is(err, ErrLeaseLost):
			res.Lost = append(res.Lost, l)
		default:
			return res, err
		}
	}
	return res, nil
}

// renewAllOnce runs renewAllSQL, adding what it renewed and found lost to
// res, and returns the leases still held but skipped as locked. On an
// error res is left alone: nothing is known until the whole result is
// read (the statement commits at its end).
func (n *Node) renewAllOnce(ctx context.Context, q querier, names []string, tokens []int64, ttl time.Duration,
	byName map[string]Lease, res *Renewal) ([]Lease, error) {
	rows, err := q.QueryContext(ctx, renewAllSQL, n.id, names, tokens, ttl.Microseconds(), n.beating())
	if err != nil {
		return nil, fmt.Errorf("cluster: renew %d leases: %w", len(names), err)
	}
	defer rows.Close()
	var got Renewal
	var busy []Lease
	for rows.Next() {
		var name string
		var renewed, held bool
		if err := rows.Scan(&name, &renewed, &held); err != nil {
			return nil, fmt.Errorf("cluster: renew %d leases: %w", len(names), err)
		}
		switch l := byName[name]; {
		case renewed:
			got.Renewed = append(got.Renewed, l)
		case held:
			busy = append(busy, l)
		default:
			got.Lost = append(got.Lost, l)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("cluster: renew %d leases: %w", len(names), err)
	}
	res.Renewed, res.Lost = append(res.Renewed, got.Renewed...), append(res.Lost, got.Lost...)
	return busy, nil
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
