package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The transcript holds a lane's turns (a user row and an assistant row
// each) and, around them, what else the lane's conversation had: the
// gateway's notices (role RoleNotice, written with their outbox row) and
// messages that never became a turn because they were refused (a user row
// of their own). Readers that want turns only (usage, rotation) read the
// assistant rows.

// Transcript roles (Message.Role).
const (
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleNotice    = "notice" // a gateway notice
)

// noticeRoleColumn is how a notice's role is stored: the column's CHECK has
// allowed "system" since the first migration (no row used it before), so
// notices need no rebuild of the messages table. scanMessages reads it back
// as RoleNotice.
const noticeRoleColumn = "system"

// maxMovedNotices bounds the notices one commit moves after its turn's
// message (moveTurnNotices).
const maxMovedNotices = 32

// The turn_id prefixes of rows that are no codex turn's.
const (
	noticeTurnPrefix  = "notice:"
	refusedTurnPrefix = "inbound:"
)

// NoticeTurnID is the turn_id of the transcript row of outbox notice id:
// unique per notice, and never a codex turn id.
func NoticeTurnID(outboxID int64) string { return noticeTurnPrefix + strconv.FormatInt(outboxID, 10) }

// RefusedTurnID is the turn_id of the user row of an inbound message that
// was refused instead of run: one per inbound row, so a refusal recorded
// twice writes one row.
func RefusedTurnID(inboundID int64) string {
	return refusedTurnPrefix + strconv.FormatInt(inboundID, 10)
}

// isCodexTurn reports whether a stored turn_id is a codex turn's rather than
// the key of a notice or a refused message.
func isCodexTurn(turnID string) bool {
	return !strings.HasPrefix(turnID, noticeTurnPrefix) && !strings.HasPrefix(turnID, refusedTurnPrefix)
}

// Refusal is a recorded message the gateway answers instead of running.
type Refusal struct {
	InboundID int64
	// Text and MessageID are the message as its turn would have carried
	// them (the user row's text and platform message id).
	Text, MessageID string
	// Notice is the answer, queued in the outbox.
	Notice OutboxMessage
}

// RefuseInbound closes a refused message in one transaction: its inbound
// row is marked failed (start-up recovery does not run it), its text is
// kept as a user row of the lane's transcript, and the answer is queued
// (and kept as a notice row). It returns the answer's outbox id.
func (s *Store) RefuseInbound(ctx context.Context, r Refusal) (int64, error) {
	key := r.Notice.SessionKey
	var id int64
	err := s.writeLane(ctx, key, func(ctx context.Context, q querier) error {
		now := s.now()
		if r.InboundID != 0 {
			if _, err := q.ExecContext(ctx, "UPDATE inbox SET state = 'failed', updated_at = ? WHERE id = ?",
				toDB(now), r.InboundID); err != nil {
				return fmt.Errorf("mark inbound failed: %w", err)
			}
			if err := recordRefused(ctx, q, key, r, now); err != nil {
				return err
			}
		}
		var err error
		id, err = s.enqueueTx(ctx, q, r.Notice)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: refuse inbound %d on %q: %w", r.InboundID, key, err)
	}
	return id, nil
}

func recordRefused(ctx context.Context, q querier, key string, r Refusal, now time.Time) error {
	lane, err := loadLaneRoute(ctx, q, key)
	if errors.Is(err, ErrNotFound) {
		return nil // no transcript to keep it in; the answer is still sent
	}
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `INSERT INTO messages (session_id, session_key, role, text, turn_id, platform_message_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_key, turn_id, role) DO NOTHING`,
		lane.SessionID, key, RoleUser, r.Text, RefusedTurnID(r.InboundID), r.MessageID, toDB(now))
	if err != nil {
		return fmt.Errorf("insert refused user row: %w", err)
	}
	return nil
}

// LastTurnAt is when the last turn of the lane's current session was
// committed (its assistant row); the zero time when it has none. Notices
// and refused messages are not turns: a "queued" notice must not make an
// idle lane look active.
func (s *Store) LastTurnAt(ctx context.Context, sessionKey string) (time.Time, error) {
	lane, err := loadLane(ctx, s.rq, sessionKey)
	if err != nil {
		return time.Time{}, fmt.Errorf("store: last turn: %w", classify(err))
	}
	var last int64
	err = s.rq.QueryRowContext(ctx, `SELECT COALESCE(MAX(created_at), 0) FROM messages
		WHERE session_id = ? AND role = 'assistant'`, lane.SessionID).Scan(&last)
	if err != nil {
		return time.Time{}, fmt.Errorf("store: last turn: %w", classify(err))
	}
	return fromDB(last), nil
}

// moveTurnNotices puts the notices the lane was told while the turn ran
// ("queued", "added to the reply in progress", a decided approval, a
// replaced thread) after the turn's user rows: those are written only when
// the turn completes, so without the move a reloaded conversation would
// show each answer above the message it answers. The turn's journal entry
// says when the turn began; a turn without one moves nothing.
//
// It runs on every commit, so it reads backwards from the turn's user row
// and stops at the first row older than the turn: a few rows, however
// long the transcript. At most maxMovedNotices are moved; a turn that
// told its lane more keeps the rest where they were written.
func moveTurnNotices(ctx context.Context, q querier, t CompletedTurn, sessionID int64) error {
	rows, err := q.QueryContext(ctx, `SELECT m.id, m.session_id, m.role, m.text, m.turn_id, m.outbox_id, m.created_at,
		COALESCE((SELECT j.started_at FROM turn_journal j WHERE j.session_key = ? AND j.generation = ?
			AND (j.turn_id = '' OR j.turn_id = ?)), ?)
		FROM messages m WHERE m.session_key = ?
		AND m.id < (SELECT u.id FROM messages u WHERE u.session_key = ? AND u.turn_id = ? AND u.role = 'user')
		ORDER BY m.id DESC LIMIT ?`,
		t.SessionKey, t.Generation, t.TurnID, int64(math.MaxInt64), t.SessionKey, t.SessionKey, t.TurnID, maxMovedNotices)
	if err != nil {
		return fmt.Errorf("read turn notices: %w", err)
	}
	type notice struct {
		id, outboxID, created int64
		text, turnID          string
	}
	var moved []notice
	for rows.Next() {
		var n notice
		var session, started int64
		var role string
		if err := rows.Scan(&n.id, &session, &role, &n.text, &n.turnID, &n.outboxID, &n.created, &started); err != nil {
			rows.Close()
			return fmt.Errorf("read turn notices: %w", err)
		}
		if n.created < started {
			break // older than the turn: so is every row before it
		}
		if role == noticeRoleColumn && session == sessionID {
			moved = append(moved, n)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read turn notices: %w", err)
	}
	slices.Reverse(moved) // oldest first, as they were told
	for _, n := range moved {
		if _, err := q.ExecContext(ctx, "DELETE FROM messages WHERE id = ?", n.id); err != nil {
			return fmt.Errorf("move turn notice: %w", err)
		}
		if _, err := q.ExecContext(ctx, `INSERT INTO messages (session_id, session_key, role, text, turn_id, outbox_id, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, sessionID, t.SessionKey, noticeRoleColumn, n.text, n.turnID, n.outboxID, n.created); err != nil {
			return fmt.Errorf("move turn notice: %w", err)
		}
	}
	return nil
}
