package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math"
)

const laneColumns = `r.session_key, r.platform, r.kind, r.chat_id, r.topic_id, r.user_id, r.session_id,
	r.codex_thread_id, r.binding, r.generation, r.created_at, r.updated_at, r.last_active_at,
	s.started_at, r.turns, r.meta, r.project, r.verbose, r.model, r.effort, r.collab_mode, r.timezone
	FROM gateway_routing r JOIN sessions s ON s.id = r.session_id`

type rowScanner interface{ Scan(dest ...any) error }

func scanLane(row rowScanner) (Lane, error) {
	var (
		l                                  Lane
		binding, meta                      string
		created, updated, active, sessionT int64
	)
	err := row.Scan(&l.SessionKey, &l.Platform, &l.Kind, &l.ChatID, &l.TopicID, &l.UserID, &l.SessionID,
		&l.ThreadID, &binding, &l.Generation, &created, &updated, &active, &sessionT, &l.Turns, &meta, &l.Project,
		&l.Verbose, &l.Model, &l.Effort, &l.Mode, &l.Timezone)
	if err != nil {
		return Lane{}, err
	}
	l.Binding = Binding(binding)
	l.CreatedAt, l.UpdatedAt, l.LastActiveAt, l.SessionStartedAt = fromDB(created), fromDB(updated), fromDB(active), fromDB(sessionT)
	if err := json.Unmarshal([]byte(meta), &l.Meta); err != nil {
		return Lane{}, fmt.Errorf("lane %s: decode meta: %w", l.SessionKey, err)
	}
	return l, nil
}

func loadLane(ctx context.Context, q querier, sessionKey string) (Lane, error) {
	l, err := scanLane(q.QueryRowContext(ctx, "SELECT "+laneColumns+" WHERE r.session_key = ?", sessionKey))
	if errors.Is(err, sql.ErrNoRows) {
		return Lane{}, fmt.Errorf("%w: lane %q", ErrNotFound, sessionKey)
	}
	return l, err
}

// loadLaneRoute reads what committing a turn needs of its lane: address,
// session, thread, binding and generation. Not the whole lane: the join
// with its session and the decoding of its meta's JSON are work the
// writer would do on every turn for nothing.
func loadLaneRoute(ctx context.Context, q querier, sessionKey string) (Lane, error) {
	var l Lane
	var binding string
	err := q.QueryRowContext(ctx, `SELECT session_key, platform, kind, chat_id, topic_id, user_id, session_id,
		codex_thread_id, binding, generation FROM gateway_routing WHERE session_key = ?`, sessionKey).Scan(
		&l.SessionKey, &l.Platform, &l.Kind, &l.ChatID, &l.TopicID, &l.UserID, &l.SessionID, &l.ThreadID, &binding, &l.Generation)
	if errors.Is(err, sql.ErrNoRows) {
		return Lane{}, fmt.Errorf("%w: lane %q", ErrNotFound, sessionKey)
	}
	l.Binding = Binding(binding)
	return l, err
}

// laneGeneration is the lane's generation, or ErrNotFound.
func laneGeneration(ctx context.Context, q querier, sessionKey string) (int64, error) {
	var gen int64
	err := q.QueryRowContext(ctx, "SELECT generation FROM gateway_routing WHERE session_key = ?", sessionKey).Scan(&gen)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: lane %q", ErrNotFound, sessionKey)
	}
	return gen, err
}

// Lane returns the routing row of one lane, or ErrNotFound.
func (s *Store) Lane(ctx context.Context, sessionKey string) (Lane, error) {
	l, err := loadLane(s.shortRead(ctx), s.rq, sessionKey)
	if err != nil {
		return Lane{}, fmt.Errorf("store: lane: %w", classify(err))
	}
	return l, nil
}

// Lanes returns up to limit lanes, most recently active first (limit <= 0: all).
func (s *Store) Lanes(ctx context.Context, limit int) ([]Lane, error) {
	rows, err := s.rq.QueryContext(ctx,
		"SELECT "+laneColumns+" ORDER BY r.last_active_at DESC, r.session_key LIMIT ?", sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("store: lanes: %w", classify(err))
	}
	defer rows.Close()
	var lanes []Lane
	for rows.Next() {
		l, err := scanLane(rows)
		if err != nil {
			return nil, fmt.Errorf("store: lanes: %w", err)
		}
		lanes = append(lanes, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: lanes: %w", classify(err))
	}
	return lanes, nil
}

// sqlLimit maps "no limit" (<= 0) to the largest LIMIT: SQLite's -1 is an
// error in PostgreSQL.
func sqlLimit(limit int) int64 {
	if limit <= 0 {
		return math.MaxInt64
	}
	return int64(limit)
}

// EnsureLane creates the routing row and the lane's first session if
// missing, and marks the lane active either way.
func (s *Store) EnsureLane(ctx context.Context, k LaneKey) (Lane, error) {
	if k.SessionKey == "" || k.Platform == "" {
		return Lane{}, fmt.Errorf("%w: EnsureLane needs a session key and a platform", ErrInvalid)
	}
	var lane Lane
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		if err := ensureLaneTx(ctx, q, k, toDB(s.now())); err != nil {
			return err
		}
		var err error
		lane, err = loadLane(ctx, q, k.SessionKey)
		return err
	})
	if err != nil {
		return Lane{}, fmt.Errorf("store: ensure lane %q: %w", k.SessionKey, err)
	}
	return lane, nil
}

// ensureLaneTx creates the lane or marks it active now.
func ensureLaneTx(ctx context.Context, q querier, k LaneKey, now int64) error {
	res, err := q.ExecContext(ctx,
		"UPDATE gateway_routing SET last_active_at = ? WHERE session_key = ?", now, k.SessionKey)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return createLane(ctx, q, k, now)
	}
	return nil
}

// nameLaneTx sets the lane's meta title when it has none. Only the meta
// column is read: this runs on every message that could name its lane.
func nameLaneTx(ctx context.Context, q querier, sessionKey, title string) error {
	if title == "" {
		return nil
	}
	var raw string
	if err := q.QueryRowContext(ctx, "SELECT meta FROM gateway_routing WHERE session_key = ?", sessionKey).Scan(&raw); err != nil {
		return err
	}
	meta := map[string]string{}
	if raw != "" {
		if err := json.Unmarshal([]byte(raw), &meta); err != nil {
			return fmt.Errorf("lane %q meta: %w", sessionKey, err)
		}
	}
	if meta["title"] != "" {
		return nil
	}
	meta["title"] = title
	encoded, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, "UPDATE gateway_routing SET meta = ? WHERE session_key = ?", string(encoded), sessionKey)
	return err
}

func createLane(ctx context.Context, q querier, k LaneKey, now int64) error {
	sessionID, err := startSession(ctx, q, k.SessionKey, 1, 0, now)
	if err != nil {
		return err
	}
	_, err = q.ExecContext(ctx, `INSERT INTO gateway_routing
		(session_key, platform, kind, chat_id, topic_id, user_id, session_id, generation, created_at, updated_at, last_active_at)
		VALUES (?, ?, ?, ?, ?, ?, ?, 1, ?, ?, ?)`,
		k.SessionKey, k.Platform, k.Kind, k.ChatID, k.TopicID, k.UserID, sessionID, now, now, now)
	return err
}

func startSession(ctx context.Context, q querier, sessionKey string, generation, parent, now int64) (int64, error) {
	var parentID any
	if parent != 0 {
		parentID = parent
	}
	var id int64
	err := q.QueryRowContext(ctx,
		"INSERT INTO sessions (session_key, generation, parent_id, started_at) VALUES (?, ?, ?, ?) RETURNING id",
		sessionKey, generation, parentID, now).Scan(&id)
	if err != nil {
		return 0, fmt.Errorf("start session: %w", err)
	}
	return id, nil
}

// checkGeneration refuses a write computed under another generation.
func checkGeneration(l Lane, gen int64) error {
	if l.Generation != gen {
		return fmt.Errorf("%w: lane %q is at generation %d, the write was made under %d",
			ErrStaleGeneration, l.SessionKey, l.Generation, gen)
	}
	return nil
}

// BindThread records threadID as the lane's Codex thread, binding pending,
// if the lane is still at generation gen. Re-binding the thread that is
// already confirmed keeps it confirmed (a resume of a proven thread).
func (s *Store) BindThread(ctx context.Context, sessionKey string, gen int64, threadID string) error {
	if threadID == "" {
		return fmt.Errorf("%w: BindThread needs a thread id", ErrInvalid)
	}
	err := s.writeLane(ctx, sessionKey, func(ctx context.Context, q querier) error {
		lane, err := loadLane(ctx, q, sessionKey)
		if err != nil {
			return err
		}
		if err := checkGeneration(lane, gen); err != nil {
			return err
		}
		binding := Binding(BindingPending)
		if lane.ThreadID == threadID && lane.Binding == BindingConfirmed {
			binding = BindingConfirmed
		}
		return bindNewThread(ctx, q, lane, threadID, binding, "", toDB(s.now()))
	})
	if err != nil {
		return fmt.Errorf("store: bind thread on %q: %w", sessionKey, err)
	}
	return nil
}

// AttachThread binds the lane to a thread it did not start (/attach: one
// the Codex CLI or an IDE started, or one this lane let go of), pending
// until a turn completes on it, if the lane is still at generation gen and
// no other lane is bound to the thread (ErrThreadHeld) or ever was
// (ErrThreadReleased): a thread another lane let go of holds that
// conversation. The check and the write are one transaction of the single
// writer.
func (s *Store) AttachThread(ctx context.Context, sessionKey string, gen int64, threadID string) error {
	if threadID == "" {
		return fmt.Errorf("%w: AttachThread needs a thread id", ErrInvalid)
	}
	err := s.writeLane(ctx, sessionKey, func(ctx context.Context, q querier) error {
		lane, err := loadLane(ctx, q, sessionKey)
		if err != nil {
			return err
		}
		if err := checkGeneration(lane, gen); err != nil {
			return err
		}
		claim, err := threadClaim(ctx, q, threadID, sessionKey)
		if err != nil {
			return err
		}
		if err := claim.refusal(); err != nil {
			return err
		}
		return bindNewThread(ctx, q, lane, threadID, BindingPending, "attached", toDB(s.now()))
	})
	if err != nil {
		return fmt.Errorf("store: attach thread on %q: %w", sessionKey, err)
	}
	return nil
}

// ThreadClaim is another lane's claim on a Codex thread, which /attach
// refuses: the lane bound to it now, or the lane that once was and let it
// go. The zero value: no other lane ever had the thread.
type ThreadClaim struct {
	Lane string // the other lane's session key; "" when none
	Held bool   // bound to it now (pending or confirmed), not let go of
}

// refusal is the error AttachThread gives for the claim, nil for none.
func (c ThreadClaim) refusal() error {
	switch {
	case c.Lane == "":
		return nil
	case c.Held:
		return fmt.Errorf("%w: %s", ErrThreadHeld, c.Lane)
	}
	return fmt.Errorf("%w: %s", ErrThreadReleased, c.Lane)
}

// ThreadClaim is the claim of a lane other than exceptKey on threadID: the
// lane bound to it now, else one that ever was.
func (s *Store) ThreadClaim(ctx context.Context, threadID, exceptKey string) (ThreadClaim, error) {
	claim, err := threadClaim(s.shortRead(ctx), s.rq, threadID, exceptKey)
	if err != nil {
		return ThreadClaim{}, fmt.Errorf("store: thread claim: %w", classify(err))
	}
	return claim, nil
}

func threadClaim(ctx context.Context, q querier, threadID, exceptKey string) (ThreadClaim, error) {
	holder, err := threadHolder(ctx, q, threadID, exceptKey)
	if err != nil || holder != "" {
		return ThreadClaim{Lane: holder, Held: true}, err
	}
	var key string
	err = q.QueryRowContext(ctx, `SELECT session_key FROM lane_threads
		WHERE thread_id = ? AND session_key <> ? ORDER BY bound_at LIMIT 1`, threadID, exceptKey).Scan(&key)
	if errors.Is(err, sql.ErrNoRows) {
		return ThreadClaim{}, nil
	}
	return ThreadClaim{Lane: key}, err
}

func threadHolder(ctx context.Context, q querier, threadID, exceptKey string) (string, error) {
	var key string
	err := q.QueryRowContext(ctx, `SELECT session_key FROM gateway_routing
		WHERE codex_thread_id = ? AND session_key <> ? AND binding IN (?, ?) LIMIT 1`,
		threadID, exceptKey, string(BindingPending), string(BindingConfirmed)).Scan(&key)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	return key, err
}

// MarkBindingLost records that the lane's thread cannot be resumed. It is
// refused (ErrStaleGeneration) if the lane moved to another generation or
// another thread meanwhile. The thread id is kept for the record.
func (s *Store) MarkBindingLost(ctx context.Context, sessionKey string, gen int64, threadID, reason string) error {
	err := s.writeLane(ctx, sessionKey, func(ctx context.Context, q querier) error {
		lane, err := loadLane(ctx, q, sessionKey)
		if err != nil {
			return err
		}
		if err := checkGeneration(lane, gen); err != nil {
			return err
		}
		if lane.ThreadID != threadID {
			return fmt.Errorf("%w: lane %q is bound to thread %q, not %q",
				ErrStaleGeneration, sessionKey, lane.ThreadID, threadID)
		}
		return setBinding(ctx, q, sessionKey, threadID, BindingLost, reason, toDB(s.now()))
	})
	if err != nil {
		return fmt.Errorf("store: mark binding lost on %q: %w", sessionKey, err)
	}
	return nil
}

func setBinding(ctx context.Context, q querier, sessionKey, threadID string, b Binding, reason string, now int64) error {
	_, err := q.ExecContext(ctx, `UPDATE gateway_routing
		SET codex_thread_id = ?, binding = ?, binding_reason = ?, updated_at = ? WHERE session_key = ?`,
		threadID, string(b), reason, now, sessionKey)
	return err
}

// bindNewThread is setBinding of a thread the lane may not have had: it
// also remembers that the lane had it, so the thread stays this lane's
// after the lane lets it go (ThreadClaim). Only BindThread and
// AttachThread give a lane another thread; confirming or losing a binding
// keeps the thread, and a resume of the lane's current thread (recorded
// when it was bound, or carried over by migration 22) costs no write.
func bindNewThread(ctx context.Context, q querier, lane Lane, threadID string, b Binding, reason string, now int64) error {
	if err := setBinding(ctx, q, lane.SessionKey, threadID, b, reason, now); err != nil || lane.ThreadID == threadID {
		return err
	}
	_, err := q.ExecContext(ctx, `INSERT INTO lane_threads (thread_id, session_key, bound_at) VALUES (?, ?, ?)
		ON CONFLICT DO NOTHING`, threadID, lane.SessionKey, now)
	return err
}

// ResetLane is /reset: the generation moves on (fencing off every write of
// turns in flight), the current session ends with reason, a new session
// (parent = the old one) begins, the binding is cleared and the journal
// entry dropped.
func (s *Store) ResetLane(ctx context.Context, sessionKey, reason string) (Lane, error) {
	lane, err := s.rotateLane(ctx, sessionKey, nil, reason, false)
	if err != nil {
		return Lane{}, fmt.Errorf("store: reset lane %q: %w", sessionKey, err)
	}
	return lane, nil
}

// RotateSession ends the current transcript session and starts a new one,
// if the lane is still at generation gen. With keepThread the Codex thread
// binding and the generation stay (policy rotation: same working thread, new
// transcript); without it the lane is reset exactly like ResetLane.
func (s *Store) RotateSession(ctx context.Context, sessionKey string, gen int64, reason string, keepThread bool) (Lane, error) {
	lane, err := s.rotateLane(ctx, sessionKey, &gen, reason, keepThread)
	if err != nil {
		return Lane{}, fmt.Errorf("store: rotate session of %q: %w", sessionKey, err)
	}
	return lane, nil
}

// rotateLane loads the lane and rotates its session in one write; with gen
// set, only if the lane is still at that generation.
func (s *Store) rotateLane(ctx context.Context, sessionKey string, gen *int64, reason string, keepThread bool) (Lane, error) {
	var lane Lane
	err := s.writeLane(ctx, sessionKey, func(ctx context.Context, q querier) error {
		old, err := loadLane(ctx, q, sessionKey)
		if err != nil {
			return err
		}
		if gen != nil {
			if err := checkGeneration(old, *gen); err != nil {
				return err
			}
		}
		lane, err = s.rotate(ctx, q, old, reason, keepThread)
		return err
	})
	return lane, err
}

func (s *Store) rotate(ctx context.Context, q querier, old Lane, reason string, keepThread bool) (Lane, error) {
	now := toDB(s.now())
	if _, err := q.ExecContext(ctx, "UPDATE sessions SET ended_at = ?, end_reason = ? WHERE id = ?",
		now, reason, old.SessionID); err != nil {
		return Lane{}, fmt.Errorf("end session: %w", err)
	}
	gen := old.Generation
	if !keepThread {
		gen++
	}
	sessionID, err := startSession(ctx, q, old.SessionKey, gen, old.SessionID, now)
	if err != nil {
		return Lane{}, err
	}
	if keepThread {
		_, err = q.ExecContext(ctx, `UPDATE gateway_routing SET session_id = ?, turns = 0,
			updated_at = ?, last_active_at = ? WHERE session_key = ?`, sessionID, now, now, old.SessionKey)
	} else {
		_, err = q.ExecContext(ctx, `UPDATE gateway_routing SET session_id = ?, turns = 0, generation = ?,
			codex_thread_id = '', binding = '', binding_reason = '', updated_at = ?, last_active_at = ?
			WHERE session_key = ?`, sessionID, gen, now, now, old.SessionKey)
		if err == nil {
			err = dropJournal(ctx, q, old.SessionKey, now)
		}
	}
	if err != nil {
		return Lane{}, err
	}
	return loadLane(ctx, q, old.SessionKey)
}

// dropJournal forgets the lane's journaled turn and its turn to retry on a
// reset and closes the turn's inbound row: the reset wins over the turn, so
// no later start (nor /retry) may run it in the new conversation (a crash
// before the turn's late result is discarded would otherwise leave it
// pending).
func dropJournal(ctx context.Context, q querier, sessionKey string, now int64) error {
	if _, err := q.ExecContext(ctx, `UPDATE inbox SET state = 'ignored', updated_at = ?
		WHERE id IN (SELECT inbound_id FROM turn_journal WHERE session_key = ?)
		AND state IN ('received', 'processing')`, now, sessionKey); err != nil {
		return err
	}
	if _, err := q.ExecContext(ctx, "DELETE FROM retry_turns WHERE session_key = ?", sessionKey); err != nil {
		return err
	}
	_, err := q.ExecContext(ctx, "DELETE FROM turn_journal WHERE session_key = ?", sessionKey)
	return err
}

// SetMeta merges meta into the lane's metadata; an empty value deletes the
// key. Addition to the contract.
func (s *Store) SetMeta(ctx context.Context, sessionKey string, meta map[string]string) error {
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		lane, err := loadLane(ctx, q, sessionKey)
		if err != nil {
			return err
		}
		merged := lane.Meta
		if merged == nil {
			merged = make(map[string]string, len(meta))
		}
		for k, v := range meta {
			if v == "" {
				delete(merged, k)
			} else {
				merged[k] = v
			}
		}
		encoded, err := json.Marshal(merged)
		if err != nil {
			return err
		}
		_, err = q.ExecContext(ctx, "UPDATE gateway_routing SET meta = ?, updated_at = ? WHERE session_key = ?",
			string(encoded), toDB(s.now()), sessionKey)
		return err
	})
	if err != nil {
		return fmt.Errorf("store: set meta on %q: %w", sessionKey, err)
	}
	return nil
}

// SetProject records the lane's project: the name of a configured working
// directory, "" for none. The store does not know the configuration; the
// caller checks the name. The project outlives /new, rotation and restarts.
func (s *Store) SetProject(ctx context.Context, sessionKey, name string) error {
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		return updateProject(ctx, q, sessionKey, name, nil, toDB(s.now()))
	})
	if err != nil {
		return fmt.Errorf("store: set project on %q: %w", sessionKey, err)
	}
	return nil
}

// ForgetProject clears the lane's project if it is still name (a project
// that is no longer configured); a lane that chose another one meanwhile
// keeps it. It reports whether it cleared it.
func (s *Store) ForgetProject(ctx context.Context, sessionKey, name string) (bool, error) {
	cleared := false
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		err := updateProject(ctx, q, sessionKey, "", &name, toDB(s.now()))
		if errors.Is(err, errProjectChanged) {
			return nil
		}
		cleared = err == nil
		return err
	})
	if err != nil {
		return false, fmt.Errorf("store: forget project %q on %q: %w", name, sessionKey, err)
	}
	return cleared, nil
}

// LaneOption is one of the lane's own settings (migration 10).
type LaneOption string

// The lane options; each is a gateway_routing column.
const (
	OptionVerbose LaneOption = "verbose"     // /verbose: off | summary | full
	OptionModel   LaneOption = "model"       // /model
	OptionEffort  LaneOption = "effort"      // /effort
	OptionMode    LaneOption = "collab_mode" // /plan: plan | default
	OptionTZ      LaneOption = "timezone"    // /tz: an IANA time zone name
)

// SetLaneOption records one of the lane's settings, "" for the configured
// default. The store does not check the value; the caller does. Like the
// project, the settings outlive /new, rotation and restarts.
func (s *Store) SetLaneOption(ctx context.Context, sessionKey string, opt LaneOption, value string) error {
	switch opt {
	case OptionVerbose, OptionModel, OptionEffort, OptionMode, OptionTZ:
	default:
		return fmt.Errorf("store: unknown lane option %q", opt)
	}
	err := s.write(ctx, func(ctx context.Context, q querier) error {
		// Quoted: verbose is a reserved word in PostgreSQL.
		res, err := q.ExecContext(ctx, "UPDATE gateway_routing SET \""+string(opt)+"\" = ?, updated_at = ? WHERE session_key = ?",
			value, toDB(s.now()), sessionKey)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("%w: lane %q", ErrNotFound, sessionKey)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("store: set %s on %q: %w", opt, sessionKey, err)
	}
	return nil
}

// errProjectChanged: the lane's project is not the one the write expected.
var errProjectChanged = errors.New("project changed")

// updateProject sets the lane's project, only if it is *was when was is set.
func updateProject(ctx context.Context, q querier, sessionKey, name string, was *string, now int64) error {
	lane, err := loadLane(ctx, q, sessionKey)
	if err != nil {
		return err
	}
	if was != nil && lane.Project != *was {
		return errProjectChanged
	}
	_, err = q.ExecContext(ctx, "UPDATE gateway_routing SET project = ?, updated_at = ? WHERE session_key = ?",
		name, now, sessionKey)
	return err
}

// sessionOfGeneration finds where a turn of generation gen belongs: the
// newest session the lane had at that generation.
func sessionOfGeneration(ctx context.Context, q querier, sessionKey string, gen int64) (int64, error) {
	var id int64
	err := q.QueryRowContext(ctx, `SELECT id FROM sessions WHERE session_key = ? AND generation <= ?
		ORDER BY generation DESC, id DESC LIMIT 1`, sessionKey, gen).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("%w: lane %q has no session of generation %d", ErrNotFound, sessionKey, gen)
	}
	return id, err
}
