package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Schedules: prompts a lane runs at a time (/at) or again and
// again (/every). A schedule keeps its next due time; firing it writes the
// lane's inbox row and moves the due time on in one commit, and only if
// the due time is still the one the firing read, so a firing runs once
// across crashes, restarts and nodes.

// ErrLimit: the lane already has as many schedules as it may.
var ErrLimit = errors.New("store: limit reached")

// Schedule is one stored schedule.
type Schedule struct {
	ID         int64
	SessionKey string
	// Rule is the recurring rule's text (schedule.Rule); "" for a one-off.
	Rule                   string
	Prompt                 string
	Timezone               string
	CreatorID, CreatorName string
	NextAt                 time.Time // the next firing's due time
	CreatedAt              time.Time
	Fired                  int64 // how many times it fired
	// Paused says why the schedule no longer fires (its maker is no
	// longer allowed); "" while it fires. DueSchedules leaves it out.
	Paused string
}

const scheduleColumns = `id, session_key, rule, prompt, timezone, creator_id, creator_name, next_at, created_at, fired, paused`

func scanSchedule(row rowScanner) (Schedule, error) {
	var sc Schedule
	var next, created int64
	err := row.Scan(&sc.ID, &sc.SessionKey, &sc.Rule, &sc.Prompt, &sc.Timezone, &sc.CreatorID, &sc.CreatorName,
		&next, &created, &sc.Fired, &sc.Paused)
	sc.NextAt, sc.CreatedAt = fromDB(next), fromDB(created)
	return sc, err
}

// AddSchedule stores sc (its ID and CreatedAt are set) unless the lane
// already has max schedules (ErrLimit); max ≤ 0 is no limit.
func (s *Store) AddSchedule(ctx context.Context, sc Schedule, max int) (Schedule, error) {
	if sc.SessionKey == "" || sc.Prompt == "" || sc.NextAt.IsZero() {
		return Schedule{}, fmt.Errorf("%w: a schedule needs a lane, a prompt and a due time", ErrInvalid)
	}
	if sc.CreatedAt.IsZero() {
		sc.CreatedAt = s.now()
	}
	err := s.writeLane(ctx, sc.SessionKey, func(ctx context.Context, q querier) error {
		if max > 0 {
			var n int
			if err := q.QueryRowContext(ctx, "SELECT COUNT(*) FROM schedules WHERE session_key = ?", sc.SessionKey).Scan(&n); err != nil {
				return err
			}
			if n >= max {
				return fmt.Errorf("%w: %d schedules in lane %q", ErrLimit, n, sc.SessionKey)
			}
		}
		return q.QueryRowContext(ctx, `INSERT INTO schedules
			(session_key, rule, prompt, timezone, creator_id, creator_name, next_at, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
			sc.SessionKey, sc.Rule, sc.Prompt, sc.Timezone, sc.CreatorID, sc.CreatorName, toDB(sc.NextAt), toDB(sc.CreatedAt)).Scan(&sc.ID)
	})
	if err != nil {
		return Schedule{}, fmt.Errorf("store: add schedule to %q: %w", sc.SessionKey, err)
	}
	return sc, nil
}

// Schedules lists the lane's schedules, oldest first.
func (s *Store) Schedules(ctx context.Context, sessionKey string) ([]Schedule, error) {
	return s.querySchedules(ctx, "SELECT "+scheduleColumns+" FROM schedules WHERE session_key = ? ORDER BY id", sessionKey)
}

// DueSchedules lists up to limit schedules due at now, earliest first;
// paused ones are never due.
func (s *Store) DueSchedules(ctx context.Context, now time.Time, limit int) ([]Schedule, error) {
	return s.querySchedules(ctx, "SELECT "+scheduleColumns+" FROM schedules WHERE next_at <= ? AND paused = '' "+
		"ORDER BY next_at, id LIMIT ?", toDB(now), limit)
}

// CountSchedules is how many schedules there are and the earliest due
// time among those not paused (zero when none): what /metrics shows.
func (s *Store) CountSchedules(ctx context.Context) (n int, next time.Time, err error) {
	var first sql.NullInt64
	if err := s.rq.QueryRowContext(ctx, "SELECT COUNT(*), MIN(CASE WHEN paused = '' THEN next_at END) FROM schedules").Scan(&n, &first); err != nil {
		return 0, time.Time{}, fmt.Errorf("store: count schedules: %w", classify(err))
	}
	return n, fromDB(first.Int64), nil
}

func (s *Store) querySchedules(ctx context.Context, query string, args ...any) ([]Schedule, error) {
	rows, err := s.rq.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("store: schedules: %w", classify(err))
	}
	defer rows.Close()
	var out []Schedule
	for rows.Next() {
		sc, err := scanSchedule(rows)
		if err != nil {
			return nil, fmt.Errorf("store: schedules: %w", err)
		}
		out = append(out, sc)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: schedules: %w", classify(err))
	}
	return out, nil
}

// DeleteSchedule removes the lane's schedule id (ErrNotFound when the lane
// has none of that id).
func (s *Store) DeleteSchedule(ctx context.Context, sessionKey string, id int64) error {
	err := s.writeLane(ctx, sessionKey, func(ctx context.Context, q querier) error {
		return execOne(ctx, q, "schedule", id, "DELETE FROM schedules WHERE id = ? AND session_key = ?", id, sessionKey)
	})
	if err != nil {
		return fmt.Errorf("store: delete schedule %d of %q: %w", id, sessionKey, err)
	}
	return nil
}

// PauseSchedule stops sc from firing, with why, only while it is still
// due at sc.NextAt and not paused: it reports whether this call paused
// it (false: fired, moved, paused or deleted meanwhile, by another node
// maybe), so one caller tells the lane.
func (s *Store) PauseSchedule(ctx context.Context, sc Schedule, reason string) (paused bool, err error) {
	if reason == "" {
		return false, fmt.Errorf("%w: a paused schedule needs a reason", ErrInvalid)
	}
	err = s.writeLane(ctx, sc.SessionKey, func(ctx context.Context, q querier) error {
		res, err := q.ExecContext(ctx, "UPDATE schedules SET paused = ? WHERE id = ? AND next_at = ? AND paused = ''",
			reason, sc.ID, toDB(sc.NextAt))
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		paused = n == 1
		return nil
	})
	if err != nil {
		return false, fmt.Errorf("store: pause schedule %d: %w", sc.ID, err)
	}
	return paused, nil
}

// Firing is one due firing of a schedule: the schedule as it was read,
// the firing's inbox row (nil to skip the firing: it was missed for too
// long), and the next due time (zero: the schedule is done and goes).
type Firing struct {
	Schedule Schedule
	Inbound  *Inbound
	Next     time.Time
}

// FireSchedule records a firing: the inbox row (deduplicated like any
// message, by its message id) and the schedule's next due time, in one
// commit, only while the schedule is still due at f.Schedule.NextAt. It
// reports whether this call fired it (false: it was fired, moved or
// deleted meanwhile, and nothing was written) and the inbox row's id.
func (s *Store) FireSchedule(ctx context.Context, f Firing) (inboundID int64, fired bool, err error) {
	sc := f.Schedule
	err = s.writeLane(ctx, sc.SessionKey, func(ctx context.Context, q querier) error {
		inboundID, fired = 0, false
		var res sql.Result
		var err error
		if f.Next.IsZero() {
			res, err = q.ExecContext(ctx, "DELETE FROM schedules WHERE id = ? AND next_at = ?", sc.ID, toDB(sc.NextAt))
		} else {
			res, err = q.ExecContext(ctx, "UPDATE schedules SET next_at = ?, fired = fired + ? WHERE id = ? AND next_at = ?",
				toDB(f.Next), boolInt(f.Inbound != nil), sc.ID, toDB(sc.NextAt))
		}
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return nil // another firing (a node, an earlier run) took it
		}
		fired = true
		if f.Inbound == nil {
			return nil
		}
		return insertInbox(ctx, q, *f.Inbound, s.now(), &inboundID)
	})
	if err != nil {
		return 0, false, fmt.Errorf("store: fire schedule %d: %w", sc.ID, err)
	}
	return inboundID, fired, nil
}

// insertInbox writes an inbox row no one typed (a trigger's), keeping an
// existing row of the same message id: its id is returned either way.
func insertInbox(ctx context.Context, q querier, in Inbound, now time.Time, id *int64) error {
	received := in.ReceivedAt
	if received.IsZero() {
		received = now
	}
	err := q.QueryRowContext(ctx, `INSERT INTO inbox
		(platform, message_id, session_key, sender_id, sender_name, text, received_at, updated_at, attachments, origin)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, '', ?) ON CONFLICT (platform, message_id) DO NOTHING RETURNING id`,
		in.Platform, in.MessageID, in.SessionKey, in.SenderID, in.SenderName, in.Text, toDB(received), toDB(now), in.Origin).Scan(id)
	if errors.Is(err, sql.ErrNoRows) {
		return q.QueryRowContext(ctx, "SELECT id FROM inbox WHERE platform = ? AND message_id = ?", in.Platform, in.MessageID).Scan(id)
	}
	return err
}
