package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// CommitTurn records a finished turn in one transaction:
//   - the user row and the assistant row; UNIQUE(session_key, turn_id, role)
//     makes a second commit of the same turn a no-op (Duplicate, and the
//     OutboxID of the first commit);
//   - if the lane's generation moved on: Stale, the rows stay in the session
//     the turn ran in, the binding is untouched and the reply is NOT queued;
//   - otherwise: the binding is confirmed when Confirm is set and the lane is
//     still bound to ThreadID (pending or confirmed), the reply is queued;
//   - either way the turn's journal entry is cleared and the inbound
//     message marked done;
//   - the turn to retry it reran (Retries) is marked retried, and a timed
//     out turn (Retryable) becomes the lane's turn to retry.
func (s *Store) CommitTurn(ctx context.Context, t CompletedTurn) (CommitResult, error) {
	if t.SessionKey == "" || t.TurnID == "" {
		return CommitResult{}, fmt.Errorf("%w: CommitTurn needs a session key and a turn id", ErrInvalid)
	}
	var res CommitResult
	err := s.writeLane(ctx, t.SessionKey, func(ctx context.Context, q querier) error {
		res = CommitResult{}
		return s.commitTurn(ctx, q, t, &res)
	})
	if err != nil {
		return CommitResult{}, fmt.Errorf("store: commit turn %s on %q: %w", t.TurnID, t.SessionKey, err)
	}
	return res, nil
}

func (s *Store) commitTurn(ctx context.Context, q querier, t CompletedTurn, res *CommitResult) error {
	lane, err := loadLaneRoute(ctx, q, t.SessionKey)
	if err != nil {
		return err
	}
	now := toDB(s.now())
	stale := lane.Generation != t.Generation
	sessionID, err := turnSession(ctx, q, lane, t, stale)
	if err != nil {
		return err
	}
	// The user row decides whether the turn was committed already: it and
	// the assistant row are only ever written together, here.
	added, err := insertMessage(ctx, q, sessionID, t.SessionKey, "user", t.UserText, t.TurnID, t.UserMessageID, now, t, 0)
	if err != nil {
		return err
	}
	if !added {
		res.Duplicate = true
		return q.QueryRowContext(ctx, `SELECT outbox_id FROM messages
			WHERE session_key = ? AND turn_id = ? AND role = 'assistant'`, t.SessionKey, t.TurnID).Scan(&res.OutboxID)
	}
	if err := insertSteered(ctx, q, sessionID, t, now); err != nil {
		return err
	}
	if err := moveTurnNotices(ctx, q, t, sessionID); err != nil {
		return err
	}
	if err := finishTurn(ctx, q, t, now); err != nil {
		return err
	}
	if t.Retries != nil {
		if err := markRetried(ctx, q, *t.Retries, now); err != nil {
			return err
		}
	}
	if t.Retryable && !stale {
		r := RetryTurn{SessionKey: t.SessionKey, Generation: t.Generation, InboundID: t.InboundID,
			Text: t.UserText, Reason: RetryTimedOut}
		if err := setRetryTurn(ctx, q, r, now); err != nil {
			return err
		}
	}
	if !stale {
		// Queued before the assistant row is written, so the row is
		// written with its outbox id instead of updated after.
		if res.OutboxID, err = s.queueTurnOutput(ctx, q, lane, t); err != nil {
			return err
		}
	}
	if _, err := insertMessage(ctx, q, sessionID, t.SessionKey, "assistant", t.AssistantText, t.TurnID, "", now, t, res.OutboxID); err != nil {
		return err
	}
	if stale {
		res.Stale = true
		return nil
	}
	return applyTurn(ctx, q, lane, t, sessionID, now, res)
}

// turnSession picks the session the turn's rows belong to: the one the
// caller names (checked to be this lane's), else the session the lane had
// at the turn's generation.
func turnSession(ctx context.Context, q querier, lane Lane, t CompletedTurn, stale bool) (int64, error) {
	if t.SessionID == 0 {
		if !stale {
			return lane.SessionID, nil
		}
		return sessionOfGeneration(ctx, q, lane.SessionKey, t.Generation)
	}
	if t.SessionID == lane.SessionID {
		return t.SessionID, nil // the lane's current session: its own
	}
	var owner string
	err := q.QueryRowContext(ctx, "SELECT session_key FROM sessions WHERE id = ?", t.SessionID).Scan(&owner)
	if errors.Is(err, sql.ErrNoRows) || (err == nil && owner != lane.SessionKey) {
		return 0, fmt.Errorf("%w: session %d of lane %q", ErrNotFound, t.SessionID, lane.SessionKey)
	}
	return t.SessionID, err
}

// insertMessage adds one transcript row; false means the row of this
// (session_key, turn_id, role) already exists.
func insertMessage(ctx context.Context, q querier, sessionID int64, key, role, text, turnID, platformID string, now int64, t CompletedTurn, outboxID int64) (bool, error) {
	var status string
	var u UsageRecord // only the assistant row carries the turn's usage
	var inboundID int64
	if role == "assistant" {
		status, u, inboundID = t.Status, t.Usage, t.InboundID // and its sender, from the inbound row
	}
	res, err := q.ExecContext(ctx, `INSERT INTO messages
		(session_id, session_key, role, text, turn_id, platform_message_id, status, total_tokens, context_window,
		 turn_tokens, input_tokens, cached_input_tokens, output_tokens, reasoning_tokens, context_tokens, created_at, outbox_id,
		 sender_id, thread_id)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, COALESCE((SELECT sender_id FROM inbox WHERE id = ?), ''), ?)
		ON CONFLICT (session_key, turn_id, role) DO NOTHING`,
		sessionID, key, role, text, turnID, platformID, status, u.TotalTokens, u.ContextWindow,
		u.TurnTokens, u.InputTokens, u.CachedInputTokens, u.OutputTokens, u.ReasoningTokens, u.ContextTokens, now, outboxID,
		inboundID, t.RolloutThread)
	if err != nil {
		return false, fmt.Errorf("insert %s row: %w", role, err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// insertSteered adds the user rows of messages steered into the turn, in
// order after the turn's own user row, and marks their inbound rows done.
func insertSteered(ctx context.Context, q querier, sessionID int64, t CompletedTurn, now int64) error {
	for i, in := range t.Steered {
		if _, err := insertMessage(ctx, q, sessionID, t.SessionKey, "user", in.Text, SteerTurnID(t.TurnID, i+1), in.MessageID, now, t, 0); err != nil {
			return err
		}
		if in.InboundID == 0 {
			continue
		}
		if _, err := q.ExecContext(ctx, "UPDATE inbox SET state = 'done', updated_at = ? WHERE id = ?", now, in.InboundID); err != nil {
			return fmt.Errorf("mark steered inbound done: %w", err)
		}
	}
	return nil
}

// finishTurn clears the turn's journal entry (only its own: a newer turn of
// a later generation keeps its entry) and marks the inbound message done.
func finishTurn(ctx context.Context, q querier, t CompletedTurn, now int64) error {
	if _, err := q.ExecContext(ctx, `DELETE FROM turn_journal WHERE session_key = ? AND generation = ?
		AND (turn_id = '' OR turn_id = ?)`, t.SessionKey, t.Generation, t.TurnID); err != nil {
		return fmt.Errorf("clear journal: %w", err)
	}
	if t.InboundID == 0 {
		return nil
	}
	_, err := q.ExecContext(ctx, "UPDATE inbox SET state = 'done', updated_at = ? WHERE id = ?", now, t.InboundID)
	return err
}

// queueTurnOutput queues the turn's files and then its reply; the id is
// the reply's (0 without one).
func (s *Store) queueTurnOutput(ctx context.Context, q querier, lane Lane, t CompletedTurn) (int64, error) {
	for _, f := range t.Files {
		f.OutKind = OutboxFile
		if _, err := s.enqueueTx(ctx, q, fileFor(lane, t, f)); err != nil {
			return 0, err
		}
	}
	if t.Reply == nil {
		return 0, nil
	}
	return s.enqueueTx(ctx, q, replyFor(lane, t, *t.Reply))
}

// applyTurn confirms the binding the turn proved and counts the turn.
func applyTurn(ctx context.Context, q querier, lane Lane, t CompletedTurn, sessionID, now int64, res *CommitResult) error {
	if t.Confirm && t.ThreadID != "" && lane.ThreadID == t.ThreadID &&
		(lane.Binding == BindingPending || lane.Binding == BindingConfirmed) {
		// Confirmed already (every turn after the first): nothing to write,
		// a confirmed binding has no reason and the turns update below
		// sets updated_at.
		if lane.Binding == BindingPending {
			if err := setBinding(ctx, q, lane.SessionKey, t.ThreadID, BindingConfirmed, "", now); err != nil {
				return err
			}
		}
		res.Confirmed = true
	}
	var inCurrent int64
	if sessionID == lane.SessionID {
		inCurrent = 1
	}
	_, err := q.ExecContext(ctx, `UPDATE gateway_routing SET turns = turns + ?, updated_at = ?, last_active_at = ?
		WHERE session_key = ?`, inCurrent, now, now, lane.SessionKey)
	return err
}

// replyFor fills a reply's address from the lane, and its turn from t,
// where the caller left them empty: the row is the turn's reply, labelled
// so on every delivery attempt, after a restart too.
func replyFor(lane Lane, t CompletedTurn, m OutboxMessage) OutboxMessage {
	if m.SessionKey == "" {
		m.SessionKey = lane.SessionKey
	}
	if m.Platform == "" {
		m.Platform, m.Kind, m.ChatID, m.TopicID, m.UserID = lane.Platform, lane.Kind, lane.ChatID, lane.TopicID, lane.UserID
	}
	if m.OutKind == "" {
		m.OutKind = OutboxReply
	}
	if m.OutKind == OutboxReply && m.TurnID == "" {
		m.ThreadID, m.TurnID, m.TurnStatus = t.ThreadID, t.TurnID, t.Status
	}
	return m
}

// fileFor fills a file row's address from the lane and its turn from t
// where the caller left them empty.
func fileFor(lane Lane, t CompletedTurn, m OutboxMessage) OutboxMessage {
	m = replyFor(lane, t, m)
	if m.TurnID == "" {
		m.ThreadID, m.TurnID, m.TurnStatus = t.ThreadID, t.TurnID, t.Status
	}
	return m
}

// JournalTurn records the turn in flight on a lane (one per lane, upsert:
// it replaces a cut-off entry, the lane has moved on). A journal write from
// a generation the lane has left is refused.
func (s *Store) JournalTurn(ctx context.Context, e JournalEntry) error {
	started := e.StartedAt
	if started.IsZero() {
		started = s.now()
	}
	err := s.writeLane(ctx, e.SessionKey, func(ctx context.Context, q querier) error {
		// One statement on every turn: the row is written only while the
		// lane is at the entry's generation, and only when it is not is
		// the lane read, to say why.
		res, err := q.ExecContext(ctx, journalTurnSQL,
			e.InboundID, e.ThreadID, e.TurnID, e.Text, toDB(started), e.SessionKey, e.Generation)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n > 0 {
			return err
		}
		gen, err := laneGeneration(ctx, q, e.SessionKey)
		if err != nil {
			return err
		}
		if err := checkGeneration(Lane{SessionKey: e.SessionKey, Generation: gen}, e.Generation); err != nil {
			return err
		}
		return fmt.Errorf("journal entry of generation %d not written", e.Generation)
	})
	if err != nil {
		return fmt.Errorf("store: journal turn on %q: %w", e.SessionKey, err)
	}
	return nil
}

// journalTurnSQL upserts the lane's journal entry if the lane is at the
// entry's generation. The WHERE clause also keeps SQLite from reading ON
// CONFLICT as a join constraint of the SELECT.
const journalTurnSQL = `INSERT INTO turn_journal
	(session_key, generation, inbound_id, thread_id, turn_id, text, started_at)
	SELECT session_key, generation, ?, ?, ?, ?, ? FROM gateway_routing WHERE session_key = ? AND generation = ?
	ON CONFLICT (session_key) DO UPDATE SET generation = excluded.generation, inbound_id = excluded.inbound_id,
	thread_id = excluded.thread_id, turn_id = excluded.turn_id, text = excluded.text, started_at = excluded.started_at,
	cut_off = 0`

// ClearJournal drops the lane's journal entry.
func (s *Store) ClearJournal(ctx context.Context, sessionKey string) error {
	err := s.writeLane(ctx, sessionKey, func(ctx context.Context, q querier) error {
		_, err := q.ExecContext(ctx, "DELETE FROM turn_journal WHERE session_key = ?", sessionKey)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: clear journal of %q: %w", sessionKey, err)
	}
	return nil
}

// Journal returns every journal entry, oldest first: at start-up, the turns
// a stop or crash cut off.
func (s *Store) Journal(ctx context.Context) ([]JournalEntry, error) {
	rows, err := s.rq.QueryContext(ctx, `SELECT session_key, generation, inbound_id, thread_id, turn_id, text, started_at,
		cut_off FROM turn_journal ORDER BY started_at, session_key`)
	if err != nil {
		return nil, fmt.Errorf("store: journal: %w", classify(err))
	}
	defer rows.Close()
	var out []JournalEntry
	for rows.Next() {
		var e JournalEntry
		var started int64
		if err := rows.Scan(&e.SessionKey, &e.Generation, &e.InboundID, &e.ThreadID, &e.TurnID, &e.Text, &started,
			&e.CutOff); err != nil {
			return nil, fmt.Errorf("store: journal: %w", err)
		}
		e.StartedAt = fromDB(started)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: journal: %w", classify(err))
	}
	return out, nil
}

// MarkCutOff records that a restart found the lane's journaled turn
// unfinished, in one transaction: the entry is marked cut off and becomes
// the lane's turn to retry (RetryTurn), its inbound row is marked failed
// (so it is not also run as pending) and the lane's notice is queued. A
// second start sees the mark
// and tells nobody again, however often it crashes in between. The entry
// must still be e's (same generation and inbound): ErrStaleGeneration if
// the lane moved on.
func (s *Store) MarkCutOff(ctx context.Context, e JournalEntry, notice OutboxMessage) (int64, error) {
	var id int64
	err := s.writeLane(ctx, e.SessionKey, func(ctx context.Context, q querier) error {
		now := toDB(s.now())
		res, err := q.ExecContext(ctx, `UPDATE turn_journal SET cut_off = 1
			WHERE session_key = ? AND generation = ? AND inbound_id = ? AND cut_off = 0`,
			e.SessionKey, e.Generation, e.InboundID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("%w: no unannounced journal entry for inbound %d", ErrStaleGeneration, e.InboundID)
		}
		if e.InboundID != 0 {
			if _, err := q.ExecContext(ctx, "UPDATE inbox SET state = 'failed', updated_at = ? WHERE id = ?",
				now, e.InboundID); err != nil {
				return err
			}
		}
		r := RetryTurn{SessionKey: e.SessionKey, Generation: e.Generation, InboundID: e.InboundID,
			Text: e.Text, Reason: RetryCutOff}
		if err := setRetryTurn(ctx, q, r, now); err != nil {
			return err
		}
		id, err = s.enqueueTx(ctx, q, notice)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("store: mark cut-off turn on %q: %w", e.SessionKey, err)
	}
	return id, nil
}

// RecordCompaction records a thread compaction against the lane's current
// session, with the token counts before and after (so a "successful"
// compaction that shrank nothing is visible).
func (s *Store) RecordCompaction(ctx context.Context, sessionKey, threadID string, before, after int64) error {
	err := s.writeLane(ctx, sessionKey, func(ctx context.Context, q querier) error {
		lane, err := loadLane(ctx, q, sessionKey)
		if err != nil {
			return err
		}
		_, err = q.ExecContext(ctx, `INSERT INTO compactions
			(session_key, session_id, thread_id, tokens_before, tokens_after, created_at) VALUES (?, ?, ?, ?, ?, ?)`,
			sessionKey, lane.SessionID, threadID, before, after, toDB(s.now()))
		return err
	})
	if err != nil {
		return fmt.Errorf("store: record compaction on %q: %w", sessionKey, err)
	}
	return nil
}

const messageColumns = `m.id, m.session_id, m.session_key, m.role, m.text, m.turn_id, m.platform_message_id, m.created_at`

func scanMessages(rows *sql.Rows) ([]Message, error) {
	defer rows.Close()
	var out []Message
	for rows.Next() {
		var m Message
		var created int64
		if err := rows.Scan(&m.ID, &m.SessionID, &m.SessionKey, &m.Role, &m.Text, &m.TurnID, &m.PlatformMessageID, &created); err != nil {
			return nil, err
		}
		m.CreatedAt = fromDB(created)
		if m.Role == noticeRoleColumn {
			m.Role = RoleNotice
		}
		if !isCodexTurn(m.TurnID) {
			m.TurnID = "" // a notice or a refused message: no codex turn
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// Transcript returns the last limit messages of the lane's current session,
// oldest first (limit <= 0: all). ErrNotFound if the lane does not exist.
func (s *Store) Transcript(ctx context.Context, sessionKey string, limit int) ([]Message, error) {
	lane, err := loadLane(ctx, s.rq, sessionKey)
	if err != nil {
		return nil, fmt.Errorf("store: transcript: %w", classify(err))
	}
	rows, err := s.rq.QueryContext(ctx, `SELECT * FROM (SELECT `+messageColumns+` FROM messages m
		WHERE m.session_id = ? ORDER BY m.id DESC LIMIT ?) AS t ORDER BY id`, lane.SessionID, sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("store: transcript: %w", classify(err))
	}
	msgs, err := scanMessages(rows)
	if err != nil {
		return nil, fmt.Errorf("store: transcript: %w", classify(err))
	}
	return msgs, nil
}

// Search finds messages of every lane and session by full-text search,
// best match first. The query is taken as plain words (each quoted), so
// user text can never be an FTS5 syntax error; all words must match.
func (s *Store) Search(ctx context.Context, query string, limit int) ([]Message, error) {
	match := ftsQuery(query)
	if match == "" {
		return nil, nil
	}
	search, arg := searchSQL, any(match)
	if s.d == pgDialect {
		search, arg = pgSearchSQL, strings.Join(strings.Fields(query), " ")
	}
	rows, err := s.rq.QueryContext(ctx, search, arg, sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("store: search: %w", classify(err))
	}
	msgs, err := scanMessages(rows)
	if err != nil {
		return nil, fmt.Errorf("store: search: %w", classify(err))
	}
	return msgs, nil
}

const searchSQL = `SELECT ` + messageColumns + ` FROM messages_fts f
	JOIN messages m ON m.id = f.rowid WHERE messages_fts MATCH ? ORDER BY f.rank, m.id LIMIT ?`

// pgSearchSQL is Search on PostgreSQL: the 'simple' text search
// configuration splits and lowercases words like FTS5's default tokenizer
// (no stemming, no stop words), plainto_tsquery takes the words as plain
// text and requires all of them, and ts_rank orders best match first. The
// GIN index on the same expression (pgMigrations) serves the match.
const pgSearchSQL = `SELECT ` + messageColumns + ` FROM messages m, plainto_tsquery('simple', ?) q
	WHERE to_tsvector('simple', m.text) @@ q
	ORDER BY ts_rank(to_tsvector('simple', m.text), q) DESC, m.id LIMIT ?`

func ftsQuery(query string) string {
	words := strings.Fields(query)
	for i, w := range words {
		words[i] = `"` + strings.ReplaceAll(w, `"`, `""`) + `"`
	}
	return strings.Join(words, " ")
}
