package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// The lane's turn to retry (RetryTurn) lives in retry_turns, one row per
// lane, apart from the turn journal: the journal holds the turn in flight
// and the lane's next turn replaces it, while the turn to retry must
// outlive the turns that run after it (on the API lane the cut-off notice
// arrives with the answer to the next message, and /retry comes after).

// RetryTurn returns the lane's turn to retry, if it has one not yet
// retried in its current generation.
func (s *Store) RetryTurn(ctx context.Context, sessionKey string) (RetryTurn, bool, error) {
	r := RetryTurn{SessionKey: sessionKey}
	var stopped int64
	err := s.rq.QueryRowContext(ctx, `SELECT t.generation, t.inbound_id, t.text, t.reason, t.stopped_at
		FROM retry_turns t JOIN gateway_routing r ON r.session_key = t.session_key AND r.generation = t.generation
		WHERE t.session_key = ? AND t.retried_at = 0`, sessionKey).
		Scan(&r.Generation, &r.InboundID, &r.Text, &r.Reason, &stopped)
	if errors.Is(err, sql.ErrNoRows) {
		return RetryTurn{}, false, nil
	}
	if err != nil {
		return RetryTurn{}, false, fmt.Errorf("store: turn to retry of %q: %w", sessionKey, classify(err))
	}
	r.At = fromDB(stopped)
	return r, true, nil
}

// setRetryTurn makes r the lane's turn to retry, replacing an older one
// (retried or not): only the newest counts.
func setRetryTurn(ctx context.Context, q querier, r RetryTurn, now int64) error {
	_, err := q.ExecContext(ctx, `INSERT INTO retry_turns
		(session_key, generation, inbound_id, text, reason, stopped_at, retried_at) VALUES (?, ?, ?, ?, ?, ?, 0)
		ON CONFLICT (session_key) DO UPDATE SET generation = excluded.generation, inbound_id = excluded.inbound_id,
		text = excluded.text, reason = excluded.reason, stopped_at = excluded.stopped_at, retried_at = 0`,
		r.SessionKey, r.Generation, r.InboundID, r.Text, r.Reason, now)
	if err != nil {
		return fmt.Errorf("record turn to retry: %w", err)
	}
	return nil
}

// markRetried records that r ran again. Only r itself is marked: a newer
// turn to retry that replaced it meanwhile stays.
func markRetried(ctx context.Context, q querier, r RetryTurn, now int64) error {
	_, err := q.ExecContext(ctx, `UPDATE retry_turns SET retried_at = ?
		WHERE session_key = ? AND generation = ? AND inbound_id = ? AND stopped_at = ? AND retried_at = 0`,
		now, r.SessionKey, r.Generation, r.InboundID, toDB(r.At))
	if err != nil {
		return fmt.Errorf("mark turn retried: %w", err)
	}
	return nil
}
