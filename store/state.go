package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// SetState records the gateway-wide value of name (migration 12); an
// empty value deletes it. The gateway owns the names and their encoding.
func (s *Store) SetState(ctx context.Context, name, value string) error {
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		if value == "" {
			_, err := q.ExecContext(ctx, "DELETE FROM gateway_state WHERE name = ?", name)
			return err
		}
		_, err := q.ExecContext(ctx, `INSERT INTO gateway_state (name, value, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
			name, value, toDB(s.now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("store: set state %q: %w", name, err)
	}
	return nil
}

// State returns the value of name, "" when none is recorded.
func (s *Store) State(ctx context.Context, name string) (string, error) {
	var v string
	err := s.rq.QueryRowContext(ctx, "SELECT value FROM gateway_state WHERE name = ?", name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("store: state %q: %w", name, classify(err))
	}
	return v, nil
}
