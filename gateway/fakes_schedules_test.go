package gateway

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/gatewayd/gatewayd/store"
)

// The fake store's schedules: the real store's contract, in memory.

func (s *fakeStore) AddSchedule(_ context.Context, sc store.Schedule, max int) (store.Schedule, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("AddSchedule"); err != nil {
		return store.Schedule{}, err
	}
	n := 0
	for _, o := range s.schedules {
		if o.SessionKey == sc.SessionKey {
			n++
		}
	}
	if max > 0 && n >= max {
		return store.Schedule{}, fmt.Errorf("%w: %d schedules", store.ErrLimit, n)
	}
	if s.schedules == nil {
		s.schedules = make(map[int64]store.Schedule)
	}
	s.scheduleSeq++
	sc.ID = s.scheduleSeq
	s.schedules[sc.ID] = sc
	return sc, nil
}

func (s *fakeStore) Schedules(_ context.Context, key string) ([]store.Schedule, error) {
	return s.schedulesWhere(func(sc store.Schedule) bool { return sc.SessionKey == key }), nil
}

func (s *fakeStore) DueSchedules(_ context.Context, now time.Time, limit int) ([]store.Schedule, error) {
	due := s.schedulesWhere(func(sc store.Schedule) bool { return !sc.NextAt.After(now) && sc.Paused == "" })
	sort.Slice(due, func(i, j int) bool { return due[i].NextAt.Before(due[j].NextAt) })
	if len(due) > limit {
		due = due[:limit]
	}
	return due, nil
}

func (s *fakeStore) schedulesWhere(keep func(store.Schedule) bool) []store.Schedule {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Schedule
	for _, sc := range s.schedules {
		if keep(sc) {
			out = append(out, sc)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func (s *fakeStore) DeleteSchedule(_ context.Context, key string, id int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc, ok := s.schedules[id]; !ok || sc.SessionKey != key {
		return store.ErrNotFound
	}
	delete(s.schedules, id)
	return nil
}

func (s *fakeStore) FireSchedule(_ context.Context, f store.Firing) (int64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.check("FireSchedule"); err != nil {
		return 0, false, err
	}
	sc, ok := s.schedules[f.Schedule.ID]
	if !ok || !sc.NextAt.Equal(f.Schedule.NextAt) {
		return 0, false, nil
	}
	var id int64
	if f.Inbound != nil {
		var err error
		if id, _, err = s.recordInboundLocked(*f.Inbound); err != nil {
			return 0, false, err
		}
		sc.Fired++
	}
	if f.Next.IsZero() {
		delete(s.schedules, sc.ID)
	} else {
		sc.NextAt = f.Next
		s.schedules[sc.ID] = sc
	}
	return id, true, nil
}

func (s *fakeStore) PauseSchedule(_ context.Context, sc store.Schedule, reason string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.schedules[sc.ID]
	if !ok || !cur.NextAt.Equal(sc.NextAt) || cur.Paused != "" {
		return false, nil
	}
	cur.Paused = reason
	s.schedules[sc.ID] = cur
	return true, nil
}
