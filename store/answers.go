package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// Answers are the exact bodies API messages were answered with, so a client
// repeating a message id (an idempotent retry) gets the same bytes back.

// RecordAnswer records the answer to a message unless one is recorded
// already, and returns the recorded body: the first answer wins, so a reply
// delivered twice (a retry, a redelivery after the client went away) never
// changes what a replay returns.
func (s *Store) RecordAnswer(ctx context.Context, sessionKey, messageID string, body []byte) ([]byte, error) {
	if sessionKey == "" || messageID == "" {
		return nil, fmt.Errorf("%w: RecordAnswer needs a session key and a message id", ErrInvalid)
	}
	var stored []byte
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		res, err := q.ExecContext(ctx, `INSERT INTO answers (session_key, message_id, body, created_at)
			VALUES (?, ?, ?, ?) ON CONFLICT (session_key, message_id) DO NOTHING`,
			sessionKey, messageID, body, toDB(s.now()))
		if err != nil {
			return err
		}
		// Inserted: body is what is recorded, so the read back of nearly
		// every answer is saved. Otherwise the first answer wins.
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		stored = body
		if n == 0 {
			err := q.QueryRowContext(ctx, "SELECT body FROM answers WHERE session_key = ? AND message_id = ?",
				sessionKey, messageID).Scan(&stored)
			if err != nil {
				return err
			}
		}
		return s.notifyAnswer(ctx, q, messageID)
	})
	if err != nil {
		return nil, fmt.Errorf("store: record answer %s/%s: %w", sessionKey, messageID, err)
	}
	return stored, nil
}

// AnswerChannel is the PostgreSQL notification channel RecordAnswer
// notifies with the message id when its transaction commits, so the node
// holding that message's request (maybe not the one that ran it) answers
// it at once.
const AnswerChannel = "gatewayd_answer"

// notifyAnswer queues the answer's notification in the write's
// transaction: PostgreSQL sends it on commit, and never if it rolls back.
// SQLite has one node, whose requests are answered in memory.
func (s *Store) notifyAnswer(ctx context.Context, q querier, messageID string) error {
	if s.d != pgDialect {
		return nil
	}
	_, err := q.ExecContext(ctx, "SELECT pg_notify(?, ?)", AnswerChannel, messageID)
	return err
}

// Exchange is an inbound message with what became of it: its state, the
// answer recorded for it, and whether an outbox row answering it is still
// pending (its answer exists but has not reached the platform yet).
type Exchange struct {
	InboundRow
	Answer        []byte // nil until recorded
	AnswerPending bool
}

// Exchange looks an inbound message up by platform and platform message id
// (unique per platform, not per lane: callers check SessionKey), or
// returns ErrNotFound. One statement reads one snapshot, and an answer is
// recorded before its outbox row leaves the pending state, so a message
// never looks neither answered nor about to be.
func (s *Store) Exchange(ctx context.Context, platform, messageID string) (Exchange, error) {
	var (
		x        Exchange
		received int64
	)
	err := s.rq.QueryRowContext(ctx, `SELECT i.id, i.platform, i.message_id, i.session_key, i.sender_id,
		i.sender_name, i.text, i.received_at, i.state, a.body,
		EXISTS (SELECT 1 FROM outbox o WHERE o.session_key = i.session_key AND o.state = 'pending'
			AND o.reply_to = i.message_id)
		FROM inbox i LEFT JOIN answers a ON a.session_key = i.session_key AND a.message_id = i.message_id
		WHERE i.platform = ? AND i.message_id = ?`, platform, messageID).Scan(
		&x.ID, &x.Platform, &x.MessageID, &x.SessionKey, &x.SenderID, &x.SenderName, &x.Text, &received,
		&x.State, &x.Answer, &x.AnswerPending)
	if errors.Is(err, sql.ErrNoRows) {
		return Exchange{}, fmt.Errorf("store: exchange %s/%s: %w", platform, messageID, ErrNotFound)
	}
	if err != nil {
		return Exchange{}, fmt.Errorf("store: exchange %s/%s: %w", platform, messageID, classify(err))
	}
	x.ReceivedAt = fromDB(received)
	return x, nil
}
