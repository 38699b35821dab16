package store

import (
	"context"
	"fmt"
	"math"
)

// LaneFilter narrows FindLanes. Zero fields do not filter.
type LaneFilter struct {
	Platform string // exact platform name ("api", "telegram", "discord")
	// Contains is a case-insensitive substring of the session key or of
	// the lane's title (meta "title"); taken literally, never as a pattern.
	Contains string
	Limit    int // <= 0: all
}

// FindLanes returns the lanes matching f, most recently active first.
func (s *Store) FindLanes(ctx context.Context, f LaneFilter) ([]Lane, error) {
	// instr, not LIKE: the operator's text may hold % or _.
	rows, err := s.rq.QueryContext(ctx, "SELECT "+laneColumns+`
		WHERE (?1 = '' OR r.platform = ?1)
		  AND (?2 = '' OR `+s.d.contains("lower(r.session_key)", "lower(?2)")+`
		       OR `+s.d.contains("lower(coalesce("+s.d.jsonText("r.meta", "title")+", ''))", "lower(?2)")+`)
		ORDER BY r.last_active_at DESC, r.session_key LIMIT ?3`, f.Platform, f.Contains, sqlLimit(f.Limit))
	if err != nil {
		return nil, fmt.Errorf("store: find lanes: %w", classify(err))
	}
	defer rows.Close()
	var lanes []Lane
	for rows.Next() {
		l, err := scanLane(rows)
		if err != nil {
			return nil, fmt.Errorf("store: find lanes: %w", err)
		}
		lanes = append(lanes, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: find lanes: %w", classify(err))
	}
	return lanes, nil
}

// TranscriptPage returns up to limit messages of the lane, from every
// session it had (across /new, rotation and resets), newest first, with
// ids below before (before <= 0: from the newest). The next page is asked
// with before = the last id returned. An unknown lane is ErrNotFound.
func (s *Store) TranscriptPage(ctx context.Context, sessionKey string, before int64, limit int) ([]Message, error) {
	if _, err := loadLane(ctx, s.rq, sessionKey); err != nil {
		return nil, fmt.Errorf("store: transcript page: %w", classify(err))
	}
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := s.rq.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages m
		WHERE m.session_key = ? AND m.id < ? ORDER BY m.id DESC LIMIT ?`, sessionKey, before, sqlLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("store: transcript page: %w", classify(err))
	}
	msgs, err := scanMessages(rows)
	if err != nil {
		return nil, fmt.Errorf("store: transcript page: %w", classify(err))
	}
	return msgs, nil
}
