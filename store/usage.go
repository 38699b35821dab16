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

// UsageTotals is what a lane's turns spent in a span of time, summed from
// the usage recorded with each committed turn.
type UsageTotals struct {
	Turns                                         int64
	Tokens, Input, CachedInput, Output, Reasoning int64
}

// LaneUsage sums the usage of the lane's turns committed in [from, to),
// over all its sessions (a /new or a rotation does not reset a day's
// spend); sender narrows it to the turns that sender's messages started
// ("" for all). It reads the database, so every node sees the same sums
// and they survive a restart.
func (s *Store) LaneUsage(ctx context.Context, sessionKey, sender string, from, to time.Time) (UsageTotals, error) {
	var u UsageTotals
	err := s.rq.QueryRowContext(ctx, laneUsageSQL, sessionKey, toDB(from), toDB(to), sender).Scan(
		&u.Turns, &u.Tokens, &u.Input, &u.CachedInput, &u.Output, &u.Reasoning)
	if err != nil {
		return UsageTotals{}, fmt.Errorf("store: lane usage: %w", classify(err))
	}
	return u, nil
}

// laneUsageSQL sums a lane's assistant rows in a time range
// (messages_usage_by_lane); SUM is cast because PostgreSQL's SUM of a
// BIGINT is a NUMERIC.
const laneUsageSQL = `SELECT COUNT(*), CAST(COALESCE(SUM(turn_tokens), 0) AS BIGINT),
	CAST(COALESCE(SUM(input_tokens), 0) AS BIGINT), CAST(COALESCE(SUM(cached_input_tokens), 0) AS BIGINT),
	CAST(COALESCE(SUM(output_tokens), 0) AS BIGINT), CAST(COALESCE(SUM(reasoning_tokens), 0) AS BIGINT)
	FROM messages WHERE session_key = ?1 AND role = 'assistant' AND created_at >= ?2 AND created_at < ?3
	AND (?4 = '' OR sender_id = ?4)`

// DayStart is the start of the day holding at, in loc (nil: UTC): where
// a day's usage and budget begin.
func DayStart(at time.Time, loc *time.Location) time.Time {
	if loc == nil {
		loc = time.UTC
	}
	t := at.In(loc)
	return time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, loc)
}

// MonthStart is the start of the month holding at, in loc (nil: UTC).
func MonthStart(at time.Time, loc *time.Location) time.Time {
	d := DayStart(at, loc)
	return d.AddDate(0, 0, 1-d.Day())
}

// UsagePeriods is a lane's spend in the day and in the month holding an
// instant.
type UsagePeriods struct {
	Day, Month UsageTotals
}

// LaneUsagePeriods is LaneUsage for the day and the month holding at, in
// loc (nil: UTC).
func (s *Store) LaneUsagePeriods(ctx context.Context, sessionKey, sender string, at time.Time, loc *time.Location) (UsagePeriods, error) {
	day, month := DayStart(at, loc), MonthStart(at, loc)
	var p UsagePeriods
	var err error
	if p.Day, err = s.LaneUsage(ctx, sessionKey, sender, day, day.AddDate(0, 0, 1)); err != nil {
		return UsagePeriods{}, err
	}
	if p.Month, err = s.LaneUsage(ctx, sessionKey, sender, month, month.AddDate(0, 1, 0)); err != nil {
		return UsagePeriods{}, err
	}
	return p, nil
}
