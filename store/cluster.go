package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
)

// ErrFenced means the database refused a lane write because this node's
// lease on the lane is no longer current: another node has taken the lane.
// The caller must step down from the lane.
var ErrFenced = errors.New("store: write refused, this node no longer holds the lane")

// fencedCode is the SQLSTATE the cluster package's cluster_fence raises.
const fencedCode = "GWF01"

// ClusterOptions make the store one of several nodes' on a PostgreSQL
// database. The zero value is the single-node store.
type ClusterOptions struct {
	// Shared opens the database without the exclusive ownership lock:
	// every node writes, and lane leases decide which lanes each may write.
	Shared bool
	// Fence maps a lane to the lease its writes carry. When ok, each write
	// the lane's owner makes (binding, transcript, journal, outbox) first
	// runs cluster_fence(lease, token) in its transaction and fails with
	// ErrFenced once the lease has a newer token. ok=false writes unfenced:
	// a lane this node never served (an ingest-only notice, say).
	Fence func(sessionKey string) (lease string, token int64, ok bool)
	// OnFenced, if set, is told of every lane write the database refused,
	// so the node steps down from the lane.
	OnFenced func(sessionKey string, err error)
}

// writeLane is write for an operation of one lane's owner: fenced by the
// lane's lease in cluster mode.
func (s *Store) writeLane(ctx context.Context, sessionKey string, fn writeFunc) error {
	if s.pg == nil || s.pg.cluster.Fence == nil {
		return s.write(ctx, fn)
	}
	lease, token, ok := s.pg.cluster.Fence(sessionKey)
	if !ok {
		return s.write(ctx, fn)
	}
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		if _, err := q.ExecContext(ctx, "SELECT cluster_fence(?, ?)", lease, token); err != nil {
			return err
		}
		return fn(ctx, q)
	})
	if errors.Is(err, ErrFenced) && s.pg.cluster.OnFenced != nil {
		s.pg.cluster.OnFenced(sessionKey, err)
	}
	return err
}

// ClaimInbound takes the lane's received inbox rows for processing, oldest
// first, marking them processing (fenced, like the owner's other writes).
// Rows another node's claim has locked are skipped, so a row is claimed
// once; the lane's lease makes this node the only claimer anyway.
func (s *Store) ClaimInbound(ctx context.Context, sessionKey string) ([]InboundRow, error) {
	lock := ""
	if s.d == pgDialect {
		lock = " FOR UPDATE SKIP LOCKED"
	}
	var out []InboundRow
	err := s.writeLane(ctx, sessionKey, func(ctx context.Context, q querier) error {
		out = out[:0]
		rows, err := q.QueryContext(ctx, `UPDATE inbox SET state = ?, updated_at = ?
			WHERE id IN (SELECT id FROM inbox WHERE session_key = ? AND state = ? ORDER BY id`+lock+`)
			RETURNING `+inboundRowColumns,
			InboundProcessing, toDB(s.now()), sessionKey, InboundReceived)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			r, err := scanInboundRow(rows)
			if err != nil {
				return err
			}
			out = append(out, r)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: claim inbound of %q: %w", sessionKey, err)
	}
	// RETURNING has no order of its own.
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// RequeueInbound puts the lane's claimed row id back to received, for a
// later ClaimInbound to run it in order: its owner could not start it now
// (the database was away). Fenced like the claim, so a node that lost the
// lane cannot reopen a row the new owner runs; a row no longer processing
// is left as it is.
func (s *Store) RequeueInbound(ctx context.Context, sessionKey string, id int64) error {
	err := s.writeLane(ctx, sessionKey, func(ctx context.Context, q querier) error {
		_, err := q.ExecContext(ctx, `UPDATE inbox SET state = ?, updated_at = ?
			WHERE id = ? AND session_key = ? AND state = ?`,
			InboundReceived, toDB(s.now()), id, sessionKey, InboundProcessing)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: requeue inbound %d of %q: %w", id, sessionKey, err)
	}
	return nil
}

// LanesWithWork lists the lanes that need a serving node now: unfinished
// inbox rows, a journaled turn not yet told cut off (running, or cut off
// by a dead node), or pending outbox rows. A cluster node takes the leases
// of those placed on it, and hands over only lanes not listed. A cut-off
// turn already told is not work: it waits for /retry in the store
// (RetryTurn), where whichever node then owns the lane reads it.
func (s *Store) LanesWithWork(ctx context.Context) ([]string, error) {
	rows, err := s.rq.QueryContext(ctx, `SELECT session_key FROM inbox WHERE state IN ('received', 'processing')
		UNION SELECT session_key FROM turn_journal WHERE cut_off = 0
		UNION SELECT session_key FROM outbox WHERE state = 'pending' AND held = 0`)
	if err != nil {
		return nil, fmt.Errorf("store: lanes with work: %w", classify(err))
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return nil, fmt.Errorf("store: lanes with work: %w", err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: lanes with work: %w", classify(err))
	}
	sort.Strings(keys)
	return keys, nil
}
