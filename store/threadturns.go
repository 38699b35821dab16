package store

import (
	"context"
	"fmt"
	"strings"
)

// ThreadTurn is one committed turn of a lane as its transcript has it:
// what the rollout of its thread should hold.
type ThreadTurn struct {
	TurnID string
	// User is the turn's own message, then those steered into it, in order.
	User      []string
	Assistant string
}

// ThreadTurns returns up to limit of the lane's most recent committed turns
// that ran on threadID (recorded with CompletedTurn.RolloutThread), newest
// first. Turns from before the thread was recorded are not among them.
func (s *Store) ThreadTurns(ctx context.Context, sessionKey, threadID string, limit int) ([]ThreadTurn, error) {
	if limit <= 0 || threadID == "" {
		return nil, nil
	}
	// A turn is its user row, its steered rows and its assistant row:
	// enough rows for limit turns with a few steers each.
	rows, err := s.rq.QueryContext(s.shortRead(ctx), `SELECT role, text, turn_id FROM messages
		WHERE thread_id = ? AND thread_id <> '' AND session_key = ? AND role IN ('user', 'assistant')
		ORDER BY id DESC LIMIT ?`, threadID, sessionKey, limit*8)
	if err != nil {
		return nil, fmt.Errorf("store: thread turns: %w", classify(err))
	}
	defer rows.Close()
	var (
		turns []ThreadTurn
		whole bool // the last turn's own user row was read
	)
	for rows.Next() {
		var role, text, turnID string
		if err := rows.Scan(&role, &text, &turnID); err != nil {
			return nil, fmt.Errorf("store: thread turns: %w", classify(err))
		}
		base, _, _ := strings.Cut(turnID, "#steer")
		if len(turns) == 0 || turns[len(turns)-1].TurnID != base {
			turns, whole = append(turns, ThreadTurn{TurnID: base}), false
		}
		whole = whole || (role == "user" && turnID == base)
		tt := &turns[len(turns)-1]
		if role == "assistant" {
			tt.Assistant = text
		} else {
			tt.User = append([]string{text}, tt.User...) // newest first in the rows
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: thread turns: %w", classify(err))
	}
	if len(turns) > 0 && !whole { // the row limit cut the oldest turn in two
		turns = turns[:len(turns)-1]
	}
	return turns[:min(len(turns), limit)], nil
}
