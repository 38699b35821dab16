package store

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// RoomLine is one message said in a shared room that started no turn
// (lanes.group_context): kept until the lane's next addressed turn.
type RoomLine struct {
	SessionKey, Platform, MessageID string
	Sender, Text                    string
	At                              time.Time
}

// roomKeep bounds what a lane keeps between turns: a turn takes at most
// lanes.context_messages of the newest, so older lines are dropped as new
// ones come.
const roomKeep = 200

// AddRoomLine keeps a room message for the lane's next turn. A message
// already kept (a redelivery) is not kept twice; the lane keeps its newest
// roomKeep lines.
func (s *Store) AddRoomLine(ctx context.Context, l RoomLine) error {
	if l.SessionKey == "" || l.Platform == "" || l.MessageID == "" {
		return fmt.Errorf("%w: a room line needs its lane, platform and message id", ErrInvalid)
	}
	err := s.writeLane(ctx, l.SessionKey, func(ctx context.Context, q querier) error {
		if _, err := q.ExecContext(ctx, `INSERT INTO room_context (session_key, platform, message_id, sender, text, received_at)
			VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (platform, message_id) DO NOTHING`,
			l.SessionKey, l.Platform, l.MessageID, l.Sender, l.Text, toDB(l.At)); err != nil {
			return err
		}
		_, err := q.ExecContext(ctx, `DELETE FROM room_context WHERE session_key = ? AND id <= (
			SELECT id FROM room_context WHERE session_key = ? ORDER BY id DESC LIMIT 1 OFFSET ?)`,
			l.SessionKey, l.SessionKey, roomKeep)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: add room line on %q: %w", l.SessionKey, err)
	}
	return nil
}

// TakeRoomLines returns the lane's newest limit kept lines, oldest first,
// and forgets every kept line of the lane: a turn takes the room's talk
// once.
func (s *Store) TakeRoomLines(ctx context.Context, sessionKey string, limit int) ([]RoomLine, error) {
	var lines []RoomLine
	err := s.writeLane(ctx, sessionKey, func(ctx context.Context, q querier) error {
		lines = lines[:0]
		rows, err := q.QueryContext(ctx, `SELECT platform, message_id, sender, text, received_at FROM room_context
			WHERE session_key = ? ORDER BY id DESC LIMIT ?`, sessionKey, sqlLimit(limit))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			l := RoomLine{SessionKey: sessionKey}
			var at int64
			if err := rows.Scan(&l.Platform, &l.MessageID, &l.Sender, &l.Text, &at); err != nil {
				return err
			}
			l.At = fromDB(at)
			lines = append(lines, l)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		rows.Close()
		_, err = q.ExecContext(ctx, "DELETE FROM room_context WHERE session_key = ?", sessionKey)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: take room lines of %q: %w", sessionKey, err)
	}
	slices.Reverse(lines)
	return lines, nil
}
