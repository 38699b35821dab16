package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// TurnUsage is the usage recorded with one finished turn.
type TurnUsage struct {
	TurnID, Status string
	At             time.Time
	Usage          UsageRecord
}

// LastTurnUsage returns the usage of the latest turn of the lane's current
// session that reported any; false when none did (a new session, or only
// turns that failed before codex counted tokens). It is what /status shows
// when codex has no live figures for the thread (after a restart).
func (s *Store) LastTurnUsage(ctx context.Context, sessionKey string) (TurnUsage, bool, error) {
	lane, err := loadLane(ctx, s.rq, sessionKey)
	if err != nil {
		return TurnUsage{}, false, fmt.Errorf("store: last turn usage: %w", classify(err))
	}
	var tu TurnUsage
	var at int64
	u := &tu.Usage
	err = s.rq.QueryRowContext(ctx, `SELECT turn_id, status, created_at, total_tokens, context_window,
		turn_tokens, input_tokens, cached_input_tokens, output_tokens, reasoning_tokens, context_tokens
		FROM messages WHERE session_id = ? AND role = 'assistant' AND (turn_tokens > 0 OR context_tokens > 0)
		ORDER BY id DESC LIMIT 1`, lane.SessionID).Scan(&tu.TurnID, &tu.Status, &at, &u.TotalTokens, &u.ContextWindow,
		&u.TurnTokens, &u.InputTokens, &u.CachedInputTokens, &u.OutputTokens, &u.ReasoningTokens, &u.ContextTokens)
	if errors.Is(err, sql.ErrNoRows) {
		return TurnUsage{}, false, nil
	}
	if err != nil {
		return TurnUsage{}, false, fmt.Errorf("store: last turn usage: %w", classify(err))
	}
	tu.At = fromDB(at)
	return tu, true, nil
}
