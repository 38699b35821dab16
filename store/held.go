package store

import (
	"context"
	"fmt"
	"strconv"
)

// Held outbox rows: a platform that defers a delivery (the API lane with no
// request open) keeps the row pending but held, so it is neither retried on
// a timer nor holding back the lane's later rows, until the platform asks
// for the lane's rows again or the process restarts.

// MaxHeldPerLane bounds the rows held for one lane. A lane whose client
// never comes back would otherwise keep every notice forever (and every
// start would send them all again); past the bound the oldest give way,
// marked failed with the reason.
const MaxHeldPerLane = 100

// HoldOutbox holds a pending row. A row no longer pending (already reported
// delivered, or failed) is left alone: holding it would change nothing.
//
// It is a lazy commit (writeLazy): a hold lasts only as long as the process
// (UnholdAll makes every held row due at start-up), so a power cut that
// undoes it undoes nothing a restart would keep. The row itself, pending,
// was made durable by the commit that queued it.
func (s *Store) HoldOutbox(ctx context.Context, id int64) error {
	err := s.writeLazy(ctx, func(ctx context.Context, q querier) error {
		now := toDB(s.now())
		if _, err := q.ExecContext(ctx, "UPDATE outbox SET held = 1, updated_at = ? WHERE id = ? AND state = 'pending'",
			now, id); err != nil {
			return err
		}
		_, err := q.ExecContext(ctx, `UPDATE outbox SET state = 'failed', held = 0, updated_at = ?1,
			last_error = 'dropped: more than `+strconv.Itoa(MaxHeldPerLane)+` rows held for a lane nobody reads'
			WHERE id IN (SELECT id FROM outbox WHERE state = 'pending' AND held = 1
				AND session_key = (SELECT session_key FROM outbox WHERE id = ?2)
				ORDER BY id DESC LIMIT `+noLimit+` OFFSET ?3)`, now, id, MaxHeldPerLane)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: hold outbox message %d: %w", id, err)
	}
	return nil
}

// UnholdLane makes the lane's held rows due again and reports how many.
func (s *Store) UnholdLane(ctx context.Context, sessionKey string) (int, error) {
	n, err := s.unhold(ctx, "AND session_key = ?", sessionKey)
	if err != nil {
		return 0, fmt.Errorf("store: unhold outbox of %q: %w", sessionKey, err)
	}
	return n, nil
}

// UnholdAll makes every held row due again; the gateway calls it at
// start-up, because whatever a platform held in memory died with the last
// process.
func (s *Store) UnholdAll(ctx context.Context) (int, error) {
	n, err := s.unhold(ctx, "")
	if err != nil {
		return 0, fmt.Errorf("store: unhold outbox: %w", err)
	}
	return n, nil
}

func (s *Store) unhold(ctx context.Context, where string, args ...any) (int, error) {
	var n int64
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		res, err := q.ExecContext(ctx, "UPDATE outbox SET held = 0, updated_at = ? WHERE state = 'pending' AND held = 1 "+where,
			append([]any{toDB(s.now())}, args...)...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}
