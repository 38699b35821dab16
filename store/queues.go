package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// RecordInbound stores a received platform message. A message whose
// (platform, message id) is already stored is a redelivery: its existing id
// is returned with duplicate=true and nothing changes. A message without a
// platform id is stored but can never be recognised as a duplicate.
func (s *Store) RecordInbound(ctx context.Context, in Inbound) (id int64, duplicate bool, err error) {
	id, duplicate, _, err = s.recordInbound(ctx, in, nil)
	return id, duplicate, err
}

// RecordInboundTurn is RecordInbound for a message its lane runs as a turn
// at once (the lane is idle): the same commit writes the lane's journal
// entry for it (as JournalTurn would, text being the turn's text), with
// the lane's generation and thread as they are in that commit, so the turn
// needs no journal commit of its own: one fsync fewer per message. The
// entry is returned; nil for a duplicate, which writes none. Like any
// journal entry, one whose turn never starts because gatewayd died first
// is told to its lane as cut off after the restart, not run again.
func (s *Store) RecordInboundTurn(ctx context.Context, in Inbound, text string) (id int64, duplicate bool, entry *JournalEntry, err error) {
	if in.Lane.SessionKey == "" {
		return 0, false, nil, fmt.Errorf("%w: RecordInboundTurn needs the message's lane", ErrInvalid)
	}
	return s.recordInbound(ctx, in, &text)
}

// inboundJournalSQL is journalTurnSQL at the generation the lane has in
// the commit, returning it and the lane's thread.
const inboundJournalSQL = `INSERT INTO turn_journal
	(session_key, generation, inbound_id, thread_id, turn_id, text, started_at)
	SELECT session_key, generation, ?, COALESCE(codex_thread_id, ''), '', ?, ? FROM gateway_routing WHERE session_key = ?
	ON CONFLICT (session_key) DO UPDATE SET generation = excluded.generation, inbound_id = excluded.inbound_id,
	thread_id = excluded.thread_id, turn_id = excluded.turn_id, text = excluded.text, started_at = excluded.started_at,
	cut_off = 0
	RETURNING generation, thread_id`

func (s *Store) recordInbound(ctx context.Context, in Inbound, turnText *string) (id int64, duplicate bool, entry *JournalEntry, err error) {
	if in.Platform == "" || in.SessionKey == "" {
		return 0, false, nil, fmt.Errorf("%w: RecordInbound needs a platform and a session key", ErrInvalid)
	}
	if in.Lane.SessionKey != "" && (in.Lane.SessionKey != in.SessionKey || in.Lane.Platform == "") {
		return 0, false, nil, fmt.Errorf("%w: RecordInbound's lane must be the message's session key, with a platform", ErrInvalid)
	}
	attachments, err := encodeAttachments(in.Attachments)
	if err != nil {
		return 0, false, nil, fmt.Errorf("store: record inbound %s/%s: %w", in.Platform, in.MessageID, err)
	}
	err = s.write(ctx, func(ctx context.Context, q querier) error {
		id, duplicate, entry = 0, false, nil
		var messageID any
		if in.MessageID != "" {
			messageID = in.MessageID
		}
		received := in.ReceivedAt
		if received.IsZero() {
			received = s.now()
		}
		if in.Lane.SessionKey != "" {
			if err := ensureLaneTx(ctx, q, in.Lane, toDB(s.now())); err != nil {
				return fmt.Errorf("ensure lane: %w", err)
			}
			if err := nameLaneTx(ctx, q, in.Lane.SessionKey, in.LaneTitle); err != nil {
				return fmt.Errorf("name lane: %w", err)
			}
		}
		// RETURNING, not LastInsertId: PostgreSQL has no last insert id.
		err := q.QueryRowContext(ctx, `INSERT INTO inbox
			(platform, message_id, session_key, sender_id, sender_name, text, received_at, updated_at, attachments, origin,
				reply_to, sender_admin)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (platform, message_id) DO NOTHING RETURNING id`,
			in.Platform, messageID, in.SessionKey, in.SenderID, in.SenderName, in.Text, toDB(received), toDB(s.now()), attachments,
			in.Origin, in.ReplyTo, boolInt(in.SenderAdmin)).Scan(&id)
		if errors.Is(err, sql.ErrNoRows) {
			duplicate = true
			return q.QueryRowContext(ctx, "SELECT id FROM inbox WHERE platform = ? AND message_id = ?",
				in.Platform, in.MessageID).Scan(&id)
		}
		if err != nil || turnText == nil {
			return err
		}
		e := JournalEntry{SessionKey: in.SessionKey, InboundID: id, Text: *turnText, StartedAt: fromDB(toDB(received))}
		if err := q.QueryRowContext(ctx, inboundJournalSQL, id, e.Text, toDB(received), in.SessionKey).
			Scan(&e.Generation, &e.ThreadID); err != nil {
			return fmt.Errorf("journal turn: %w", err)
		}
		entry = &e
		return nil
	})
	if err != nil {
		return 0, false, nil, fmt.Errorf("store: record inbound %s/%s: %w", in.Platform, in.MessageID, err)
	}
	return id, duplicate, entry, nil
}

var inboundStates = map[string]bool{
	InboundReceived: true, InboundProcessing: true, InboundDone: true, InboundFailed: true, InboundIgnored: true,
}

// SetInboundState moves an inbound message to state.
func (s *Store) SetInboundState(ctx context.Context, id int64, state string) error {
	if !inboundStates[state] {
		return fmt.Errorf("%w: inbound state %q", ErrInvalid, state)
	}
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		return execOne(ctx, q, "inbound", id, "UPDATE inbox SET state = ?, updated_at = ? WHERE id = ?",
			state, toDB(s.now()), id)
	})
	if err != nil {
		return fmt.Errorf("store: set inbound %d state %s: %w", id, state, err)
	}
	return nil
}

// SetInboundText replaces the text of an inbound row not yet done (the
// sender edited a message still waiting its turn), so a restart runs the
// edited text. A row already done, failed or ignored is ErrNotFound.
func (s *Store) SetInboundText(ctx context.Context, id int64, text string) error {
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		return execOne(ctx, q, "inbound", id, `UPDATE inbox SET text = ?, updated_at = ?
			WHERE id = ? AND state IN ('received', 'processing')`, text, toDB(s.now()), id)
	})
	if err != nil {
		return fmt.Errorf("store: set inbound %d text: %w", id, err)
	}
	return nil
}

// execOne runs an UPDATE that must touch exactly the row id; none is ErrNotFound.
func execOne(ctx context.Context, q querier, what string, id int64, query string, args ...any) error {
	res, err := q.ExecContext(ctx, query, args...)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil {
		return err
	} else if n == 0 {
		return fmt.Errorf("%w: %s %d", ErrNotFound, what, id)
	}
	return nil
}

// PendingInbound returns inbound messages still received or processing,
// oldest first: what a restart must pick up again.
func (s *Store) PendingInbound(ctx context.Context) ([]InboundRow, error) {
	rows, err := s.rq.QueryContext(ctx, `SELECT `+inboundRowColumns+`
		FROM inbox WHERE state IN ('received', 'processing') ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("store: pending inbound: %w", classify(err))
	}
	defer rows.Close()
	var out []InboundRow
	for rows.Next() {
		r, err := scanInboundRow(rows)
		if err != nil {
			return nil, fmt.Errorf("store: pending inbound: %w", err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: pending inbound: %w", classify(err))
	}
	return out, nil
}

// PendingOutboxFiles returns the file paths of the lane's outbox rows of
// kind file still pending, held ones included: the out copies that are yet
// to be delivered, which the files store must not prune. A row delivered or
// given up on (sent, failed) needs its copy no more.
func (s *Store) PendingOutboxFiles(ctx context.Context, sessionKey string) ([]string, error) {
	rows, err := s.rq.QueryContext(ctx, `SELECT file_path FROM outbox
		WHERE session_key = ? AND state = 'pending' AND file_path <> '' ORDER BY id`, sessionKey)
	if err != nil {
		return nil, fmt.Errorf("store: pending outbox files: %w", classify(err))
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var path string
		if err := rows.Scan(&path); err != nil {
			return nil, fmt.Errorf("store: pending outbox files: %w", err)
		}
		out = append(out, path)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: pending outbox files: %w", classify(err))
	}
	return out, nil
}

// IgnorePendingInbound marks the lane's received and processing messages
// ignored, so restart recovery does not run them, and returns how many it
// marked. It is what /reset does to the queue of a live lane, for a reset
// made while the daemon is down.
func (s *Store) IgnorePendingInbound(ctx context.Context, sessionKey string) (int, error) {
	var n int64
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		res, err := q.ExecContext(ctx, `UPDATE inbox SET state = ?, updated_at = ?
			WHERE session_key = ? AND state IN ('received', 'processing')`, InboundIgnored, toDB(s.now()), sessionKey)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: ignore pending inbound of %q: %w", sessionKey, err)
	}
	return int(n), nil
}

// Cursor returns a named cursor (e.g. Telegram's last confirmed update id).
func (s *Store) Cursor(ctx context.Context, name string) (string, bool, error) {
	var v string
	err := s.rq.QueryRowContext(ctx, "SELECT value FROM cursors WHERE name = ?", name).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("store: cursor %s: %w", name, classify(err))
	}
	return v, true, nil
}

// SetCursor stores a named cursor: a platform's read position, which the
// inbox's duplicate check makes safe to find older than it was. So it is a
// lazy commit (writeLazy): a power cut within lazySyncDelay can set it back
// and the platform's updates since are read again and dropped.
func (s *Store) SetCursor(ctx context.Context, name, value string) error {
	err := s.writeLazy(ctx, func(ctx context.Context, q querier) error {
		return s.upsertCursor(ctx, q, name, value)
	})
	if err != nil {
		return fmt.Errorf("store: set cursor %s: %w", name, err)
	}
	return nil
}

// SetCursorFenced is SetCursor for a cursor only the holder of a cluster
// lease may move (the Telegram poller's offset): the write carries the
// lease's token and fails with ErrFenced once another holder has taken the
// lease, so a paused ex-holder cannot move the cursor back. PostgreSQL
// (cluster mode) only.
func (s *Store) SetCursorFenced(ctx context.Context, name, value, lease string, token int64) error {
	if s.pg == nil {
		return fmt.Errorf("%w: a fenced cursor (%s) needs store.driver postgres", ErrInvalid, name)
	}
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		if _, err := q.ExecContext(ctx, "SELECT cluster_fence(?, ?)", lease, token); err != nil {
			return err
		}
		return s.upsertCursor(ctx, q, name, value)
	})
	if err != nil {
		return fmt.Errorf("store: set cursor %s under lease %s: %w", name, lease, err)
	}
	return nil
}

func (s *Store) upsertCursor(ctx context.Context, q querier, name, value string) error {
	_, err := q.ExecContext(ctx, `INSERT INTO cursors (name, value, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`,
		name, value, toDB(s.now()))
	return err
}

// Enqueue adds a reply to the outbox (state pending; due now unless
// NextAttemptAt is set).
func (s *Store) Enqueue(ctx context.Context, m OutboxMessage) (int64, error) {
	var id int64
	err := s.writeLane(ctx, m.SessionKey, func(ctx context.Context, q querier) error {
		var err error
		id, err = s.enqueueTx(ctx, q, m)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: enqueue for %q: %w", m.SessionKey, err)
	}
	return id, nil
}

func (s *Store) enqueueTx(ctx context.Context, q querier, m OutboxMessage) (int64, error) {
	if m.SessionKey == "" || m.Platform == "" {
		return 0, fmt.Errorf("%w: outbox message needs a session key and a platform", ErrInvalid)
	}
	switch m.OutKind {
	case "":
		m.OutKind = OutboxNotice
	case OutboxNotice, OutboxReply:
	case OutboxFile:
		if m.FilePath == "" {
			return 0, fmt.Errorf("%w: outbox file row without a file", ErrInvalid)
		}
	default:
		return 0, fmt.Errorf("%w: outbox kind %q", ErrInvalid, m.OutKind)
	}
	column := m.OutKind
	if column == OutboxFile {
		column = OutboxReply // see migration 9
	}
	now := s.now()
	next := m.NextAttemptAt
	if next.IsZero() {
		next = now
	}
	var id int64
	err := q.QueryRowContext(ctx, `INSERT INTO outbox (session_key, platform, kind, chat_id, topic_id, user_id, text,
		reply_to, edit_id, out_kind, thread_id, turn_id, turn_status, next_attempt_at, created_at, updated_at,
		file_path, file_name, file_mime, file_size, fork_lane, ping)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		m.SessionKey, m.Platform, m.Kind, m.ChatID, m.TopicID, m.UserID, m.Text, m.ReplyTo, m.EditID,
		column, m.ThreadID, m.TurnID, m.TurnStatus, toDB(next), toDB(now), toDB(now),
		m.FilePath, m.FileName, m.FileMIME, m.FileSize, m.ForkLane, m.Ping).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("insert outbox: %w", err)
	}
	if m.OutKind == OutboxNotice && m.EditID == "" {
		if err := recordNotice(ctx, q, m, id, now); err != nil {
			return 0, err
		}
	}
	return id, nil
}

// A gateway notice is part of the lane's conversation: a refusal, a
// command's answer, "queued", "cut off", "thread replaced". Each is kept as
// a transcript row of role RoleNotice in the lane's current session, in the
// same transaction as its outbox row, so the console's lane page shows what
// the lane was told after a reload as it showed it live. An edit of an
// earlier message is not a new message and is not kept. A lane not in the
// store has no transcript: its notice is only sent.
func recordNotice(ctx context.Context, q querier, m OutboxMessage, outboxID int64, now time.Time) error {
	var sessionID int64
	err := q.QueryRowContext(ctx, "SELECT session_id FROM gateway_routing WHERE session_key = ?", m.SessionKey).Scan(&sessionID)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read lane session for notice: %w", err)
	}
	_, err = q.ExecContext(ctx, `INSERT INTO messages (session_id, session_key, role, text, turn_id, outbox_id, created_at)
		VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (session_key, turn_id, role) DO NOTHING`,
		sessionID, m.SessionKey, noticeRoleColumn, m.Text, NoticeTurnID(outboxID), outboxID, toDB(now))
	if err != nil {
		return fmt.Errorf("insert notice row: %w", err)
	}
	return nil
}

// DueOutbox returns pending messages due at now, in lane order: a message is
// held back while an earlier pending message of its lane waits for a later
// retry, so replies are never delivered out of order. Callers deliver one
// lane's messages sequentially in the order returned. Each row comes with
// the parts already sent (SentParts). Held rows (HoldOutbox) are neither
// returned nor hold back their lane's later rows: the platform already has
// them and asks for them again with UnholdLane.
func (s *Store) DueOutbox(ctx context.Context, now time.Time, limit int) ([]OutboxMessage, error) {
	out, err := s.dueRows(ctx, now, limit)
	if err == nil {
		err = s.attachParts(ctx, out)
	}
	if err != nil {
		return nil, fmt.Errorf("store: due outbox: %w", err)
	}
	return out, nil
}

// dueOutboxSQL selects the due rows: pending, not held, and not behind an
// earlier row of their lane that waits for a retry. It runs after every
// commit, so it must stay an index walk over the pending rows (outbox_due),
// never a scan of every row ever sent.
const dueOutboxSQL = `SELECT o.id, o.session_key, o.platform, o.kind, o.chat_id, o.topic_id,
	o.user_id, o.text, o.reply_to, o.edit_id, o.out_kind, o.thread_id, o.turn_id, o.turn_status, o.state,
	o.attempts, o.next_attempt_at, o.platform_message_id, o.last_error, o.created_at,
	o.file_path, o.file_name, o.file_mime, o.file_size, o.fork_lane, o.ping,
	EXISTS (SELECT 1 FROM outbox_parts p WHERE p.outbox_id = o.id)
	FROM outbox o WHERE o.state = 'pending' AND o.held = 0 AND o.next_attempt_at <= ?1
	AND NOT EXISTS (SELECT 1 FROM outbox e WHERE e.session_key = o.session_key AND e.state = 'pending'
		AND e.held = 0 AND e.id < o.id AND e.next_attempt_at > ?1)
	ORDER BY o.id LIMIT ?2`

func (s *Store) dueRows(ctx context.Context, now time.Time, limit int) ([]OutboxMessage, error) {
	return s.scanDue(ctx, dueOutboxSQL, toDB(now), sqlLimit(limit))
}

// scanDue runs a due-rows query (dueOutboxSQL's columns).
func (s *Store) scanDue(ctx context.Context, query string, args ...any) ([]OutboxMessage, error) {
	ctx = s.shortRead(ctx) // and the parts read after it
	rows, err := s.rq.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, classify(err)
	}
	defer rows.Close()
	var out []OutboxMessage
	for rows.Next() {
		var m OutboxMessage
		var next, created int64
		var hasParts bool
		if err := rows.Scan(&m.ID, &m.SessionKey, &m.Platform, &m.Kind, &m.ChatID, &m.TopicID, &m.UserID, &m.Text,
			&m.ReplyTo, &m.EditID, &m.OutKind, &m.ThreadID, &m.TurnID, &m.TurnStatus, &m.State, &m.Attempts,
			&next, &m.PlatformMessageID, &m.LastError, &created,
			&m.FilePath, &m.FileName, &m.FileMIME, &m.FileSize, &m.ForkLane, &m.Ping, &hasParts); err != nil {
			return nil, err
		}
		m.NextAttemptAt, m.CreatedAt = fromDB(next), fromDB(created)
		if m.FilePath != "" {
			m.OutKind = OutboxFile // stored as 'reply' (migration 9)
		}
		if hasParts {
			// Filled by attachParts; non-nil marks the rows it must read.
			m.SentParts = []string{}
		}
		out = append(out, m)
	}
	return out, classify(rows.Err())
}

// attachParts fills SentParts of the rows (ordered by id) that have parts
// recorded, in one query. Most due rows have none (a first attempt), and
// then there is no query at all: the due read runs after every commit.
func (s *Store) attachParts(ctx context.Context, out []OutboxMessage) error {
	byID := make(map[int64]*OutboxMessage)
	var ids []any
	for i := range out {
		if out[i].SentParts == nil {
			continue
		}
		byID[out[i].ID] = &out[i]
		ids = append(ids, out[i].ID)
	}
	if len(ids) == 0 {
		return nil
	}
	// The rows' own ids, not an id range: an old row retried beside new
	// ones would make a range span every part sent in between.
	rows, err := s.rq.QueryContext(ctx, `SELECT outbox_id, platform_message_id FROM outbox_parts
		WHERE outbox_id IN (?`+strings.Repeat(", ?", len(ids)-1)+`) ORDER BY outbox_id, part`, ids...)
	if err != nil {
		return classify(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var pid string
		if err := rows.Scan(&id, &pid); err != nil {
			return err
		}
		if m := byID[id]; m != nil {
			m.SentParts = append(m.SentParts, pid)
		}
	}
	return classify(rows.Err())
}

// RecordPart records that the platform accepted part (0-based) of outbox
// row id as platformMessageID. Recording a part again is a no-op (the
// first id stays). Parts are recorded in order: part n needs part n-1, so
// the recorded parts are always the first len(SentParts) of the message.
// Like every record of a delivery it is a lazy commit (writeLazy): it
// survives a crash of gatewayd at once; a power cut within
// lazySyncDelay can lose it, and the part is sent again.
func (s *Store) RecordPart(ctx context.Context, id int64, part int, platformMessageID string) error {
	if part < 0 {
		return fmt.Errorf("%w: part %d", ErrInvalid, part)
	}
	err := s.writeLazy(ctx, func(ctx context.Context, q querier) error {
		return recordPart(ctx, q, id, part, platformMessageID, toDB(s.now()))
	})
	if err != nil {
		return fmt.Errorf("store: record part %d of outbox %d: %w", part, id, err)
	}
	return nil
}

// recordPart adds part to the row's parts unless it is there already; a
// part after a gap is refused. The common case, the next part of a row
// that exists, is one statement; only when it writes nothing are the parts
// counted, to tell a repeat from a gap or a missing row.
func recordPart(ctx context.Context, q querier, id int64, part int, platformMessageID string, now int64) error {
	res, err := q.ExecContext(ctx, `INSERT INTO outbox_parts (outbox_id, part, platform_message_id, sent_at)
		SELECT id, ?, ?, ? FROM outbox WHERE id = ?
		AND (SELECT COUNT(*) FROM outbox_parts WHERE outbox_id = ?) = ?`, part, platformMessageID, now, id, id, part)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n > 0 {
		return err
	}
	var have int
	if err := q.QueryRowContext(ctx, `SELECT COUNT(*) FROM outbox_parts WHERE outbox_id = ?`, id).Scan(&have); err != nil {
		return err
	}
	switch {
	case part < have:
		return nil // recorded already
	case part > have:
		return fmt.Errorf("%w: part %d of outbox %d before part %d", ErrInvalid, part, id, have)
	default:
		return fmt.Errorf("%w: outbox message %d", ErrNotFound, id)
	}
}

// MarkSentWithPart is RecordPart of the delivery's last part and MarkSent
// in one commit: the platform accepted the last part, nothing is left to
// send, and one commit replaces two. On error neither is applied. A lazy
// commit, like RecordPart.
func (s *Store) MarkSentWithPart(ctx context.Context, id int64, part int, platformMessageID string) error {
	if part < 0 {
		return fmt.Errorf("%w: part %d", ErrInvalid, part)
	}
	err := s.writeLazy(ctx, func(ctx context.Context, q querier) error {
		now := toDB(s.now())
		if err := recordPart(ctx, q, id, part, platformMessageID, now); err != nil {
			return err
		}
		return execOne(ctx, q, "outbox message", id, markSentSQL, platformMessageID, now, id)
	})
	if err != nil {
		return fmt.Errorf("store: mark outbox %d sent with part %d: %w", id, part, err)
	}
	return nil
}

// MarkSent records a delivered message and its platform message id. A
// lazy commit, like RecordPart.
func (s *Store) MarkSent(ctx context.Context, id int64, platformMessageID string) error {
	err := s.writeLazy(ctx, func(ctx context.Context, q querier) error {
		return execOne(ctx, q, "outbox message", id, markSentSQL, platformMessageID, toDB(s.now()), id)
	})
	if err != nil {
		return fmt.Errorf("store: mark sent %d: %w", id, err)
	}
	return nil
}

const markSentSQL = `UPDATE outbox SET state = 'sent', attempts = attempts + 1,
		platform_message_id = ?, last_error = '', updated_at = ? WHERE id = ?`

// MarkRetry records a failed attempt; the message is due again at next.
func (s *Store) MarkRetry(ctx context.Context, id int64, next time.Time, errText string) error {
	return s.markOutbox(ctx, "mark retry", id, `UPDATE outbox SET attempts = attempts + 1, next_attempt_at = ?,
		last_error = ?, updated_at = ? WHERE id = ? AND state = 'pending'`, toDB(next), errText, toDB(s.now()), id)
}

// MarkFailed gives up on a message for good.
func (s *Store) MarkFailed(ctx context.Context, id int64, errText string) error {
	return s.markOutbox(ctx, "mark failed", id, `UPDATE outbox SET state = 'failed', attempts = attempts + 1,
		last_error = ?, updated_at = ? WHERE id = ?`, errText, toDB(s.now()), id)
}

func (s *Store) markOutbox(ctx context.Context, what string, id int64, query string, args ...any) error {
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		return execOne(ctx, q, "outbox message", id, query, args...)
	})
	if err != nil {
		return fmt.Errorf("store: %s %d: %w", what, id, err)
	}
	return nil
}

// encodeAttachments is the inbox column's value: ” for none.
func encodeAttachments(a []Attachment) (string, error) {
	if len(a) == 0 {
		return "", nil
	}
	b, err := json.Marshal(a)
	if err != nil {
		return "", fmt.Errorf("encode attachments: %w", err)
	}
	return string(b), nil
}

func decodeAttachments(s string) ([]Attachment, error) {
	if s == "" {
		return nil, nil
	}
	var a []Attachment
	if err := json.Unmarshal([]byte(s), &a); err != nil {
		return nil, fmt.Errorf("decode attachments: %w", err)
	}
	return a, nil
}

// dueLanesChunk bounds the session keys of one DueOutboxFor query, well
// under both engines' limits on bound parameters.
const dueLanesChunk = 500

// DueOutboxFor is DueOutbox restricted to the lanes sessionKeys (those a
// cluster node owns), so a node's batch is never filled with other nodes'
// rows. At most limit rows (limit <= 0: all), in id order per chunk of
// lanes; a lane's rows are always in one chunk, so its order holds.
func (s *Store) DueOutboxFor(ctx context.Context, now time.Time, sessionKeys []string, limit int) ([]OutboxMessage, error) {
	var out []OutboxMessage
	for start := 0; start < len(sessionKeys); start += dueLanesChunk {
		chunk := sessionKeys[start:min(start+dueLanesChunk, len(sessionKeys))]
		rows, err := s.dueRowsOf(ctx, now, chunk, int(sqlLimit(limit))-len(out))
		if err != nil {
			return nil, fmt.Errorf("store: due outbox of %d lanes: %w", len(sessionKeys), err)
		}
		out = append(out, rows...)
		if limit > 0 && len(out) >= limit {
			break
		}
	}
	if err := s.attachParts(ctx, out); err != nil {
		return nil, fmt.Errorf("store: due outbox of %d lanes: %w", len(sessionKeys), err)
	}
	return out, nil
}

// dueRowsOf is dueRows for the lanes keys (1 to dueLanesChunk of them).
func (s *Store) dueRowsOf(ctx context.Context, now time.Time, keys []string, limit int) ([]OutboxMessage, error) {
	args := make([]any, 0, len(keys)+2)
	args = append(args, toDB(now), int64(limit))
	var in strings.Builder
	for i, k := range keys {
		if i > 0 {
			in.WriteString(", ")
		}
		in.WriteString("?" + strconv.Itoa(i+3))
		args = append(args, k)
	}
	query := strings.Replace(dueOutboxSQL, "ORDER BY o.id", "AND o.session_key IN ("+in.String()+") ORDER BY o.id", 1)
	return s.scanDue(ctx, query, args...)
}

// inboundRowColumns are the inbox columns scanInboundRow reads, in its
// order.
const inboundRowColumns = `id, platform, COALESCE(message_id, ''), session_key, sender_id, sender_name, text,
	received_at, state, attachments, origin, reply_to, sender_admin`

// scanInboundRow reads one row of inboundRowColumns.
func scanInboundRow(rows *sql.Rows) (InboundRow, error) {
	var r InboundRow
	var received, admin int64
	var attachments string
	if err := rows.Scan(&r.ID, &r.Platform, &r.MessageID, &r.SessionKey, &r.SenderID, &r.SenderName,
		&r.Text, &received, &r.State, &attachments, &r.Origin, &r.ReplyTo, &admin); err != nil {
		return r, err
	}
	var err error
	if r.Attachments, err = decodeAttachments(attachments); err != nil {
		return r, fmt.Errorf("inbound %d: %w", r.ID, err)
	}
	r.ReceivedAt, r.SenderAdmin = fromDB(received), admin != 0
	return r, nil
}
