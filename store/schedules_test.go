package store

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// TestScheduleFiresOnceAndMovesOn: a firing writes its inbox row and the
// next due time in one commit, only while the schedule is at the due time
// it read; concurrent firings of the same due time (two nodes, a restart
// racing a tick) write one row; a skipped firing writes none; a one-off
// goes after firing; the lane's limit holds.
func TestScheduleFiresOnceAndMovesOn(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	lane := mustEnsure(t, s, "sched")
	due := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	sc, err := s.AddSchedule(ctx, Schedule{SessionKey: lane.SessionKey, Rule: "every 30m", Prompt: "tick", Timezone: "UTC",
		CreatorID: "u1", CreatorName: "Ana", NextAt: due}, 2)
	if err != nil || sc.ID == 0 {
		t.Fatalf("AddSchedule = %+v, %v", sc, err)
	}
	if got, _ := s.DueSchedules(ctx, due.Add(-time.Second), 10); len(got) != 0 {
		t.Fatalf("due before its time: %+v", got)
	}
	dueNow, err := s.DueSchedules(ctx, due, 10)
	if err != nil || len(dueNow) != 1 || dueNow[0].Prompt != "tick" || dueNow[0].CreatorName != "Ana" || !dueNow[0].NextAt.Equal(due) {
		t.Fatalf("DueSchedules = %+v, %v", dueNow, err)
	}
	in := Inbound{Platform: "telegram", MessageID: "schedule:1:x", SessionKey: lane.SessionKey, SenderID: "u1", SenderName: "Ana",
		Text: "tick", Origin: "⏰ every 30m"}
	var wg sync.WaitGroup
	var mu sync.Mutex
	fired := 0
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := s.FireSchedule(ctx, Firing{Schedule: dueNow[0], Inbound: &in, Next: due.Add(30 * time.Minute)})
			if err != nil {
				t.Errorf("FireSchedule: %v", err)
			}
			if ok {
				mu.Lock()
				fired++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if fired != 1 {
		t.Errorf("%d concurrent firings of one due time fired, want 1", fired)
	}
	pending, err := s.PendingInbound(ctx)
	if err != nil || len(pending) != 1 || pending[0].Origin != "⏰ every 30m" || pending[0].Text != "tick" || pending[0].SenderName != "Ana" {
		t.Fatalf("pending inbound = %+v, %v; want the firing once, with its origin", pending, err)
	}
	all, _ := s.Schedules(ctx, lane.SessionKey)
	if len(all) != 1 || !all[0].NextAt.Equal(due.Add(30*time.Minute)) || all[0].Fired != 1 {
		t.Fatalf("after the firing %+v", all)
	}
	// A skip moves the schedule on and writes no row.
	if _, ok, err := s.FireSchedule(ctx, Firing{Schedule: all[0], Next: due.Add(time.Hour)}); err != nil || !ok {
		t.Fatalf("skip = %v, %v", ok, err)
	}
	if p, _ := s.PendingInbound(ctx); len(p) != 1 {
		t.Errorf("a skip wrote a row: %+v", p)
	}
	// A one-off goes once fired.
	once, err := s.AddSchedule(ctx, Schedule{SessionKey: lane.SessionKey, Prompt: "once", Timezone: "UTC", NextAt: due}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.AddSchedule(ctx, Schedule{SessionKey: lane.SessionKey, Prompt: "third", Timezone: "UTC", NextAt: due}, 2); !errors.Is(err, ErrLimit) {
		t.Errorf("a third schedule with max 2: %v", err)
	}
	in2 := in
	in2.MessageID = "schedule:2:x"
	if _, ok, err := s.FireSchedule(ctx, Firing{Schedule: once, Inbound: &in2}); err != nil || !ok {
		t.Fatalf("firing the one-off = %v, %v", ok, err)
	}
	if n, next, err := s.CountSchedules(ctx); err != nil || n != 1 || !next.Equal(due.Add(time.Hour)) {
		t.Errorf("CountSchedules = %d, %s, %v", n, next, err)
	}
	if err := s.DeleteSchedule(ctx, "v1:other", all[0].ID); !errors.Is(err, ErrNotFound) {
		t.Errorf("deleting another lane's schedule: %v", err)
	}
	if err := s.DeleteSchedule(ctx, lane.SessionKey, all[0].ID); err != nil {
		t.Errorf("DeleteSchedule: %v", err)
	}
}

// TestLaneTimezoneIsKept: /tz is a lane option.
func TestLaneTimezoneIsKept(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	lane := mustEnsure(t, s, "tz")
	if err := s.SetLaneOption(ctx, lane.SessionKey, OptionTZ, "Europe/Berlin"); err != nil {
		t.Fatal(err)
	}
	if l, err := s.Lane(ctx, lane.SessionKey); err != nil || l.Timezone != "Europe/Berlin" {
		t.Errorf("lane = %+v, %v", l, err)
	}
}

// TestPausedScheduleIsNeverDue: a paused schedule keeps its reason, is
// listed with it and is never due again; only one of two concurrent
// pauses (two nodes) reports pausing it, so the lane is told once.
func TestPausedScheduleIsNeverDue(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	lane := mustEnsure(t, s, "paused")
	due := time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	sc, err := s.AddSchedule(ctx, Schedule{SessionKey: lane.SessionKey, Rule: "every 30m", Prompt: "tick", Timezone: "UTC",
		CreatorID: "u1", NextAt: due}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	paused := 0
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.PauseSchedule(ctx, sc, "its maker is no longer allowed")
			if err != nil {
				t.Errorf("PauseSchedule: %v", err)
			}
			if ok {
				mu.Lock()
				paused++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if paused != 1 {
		t.Errorf("%d concurrent pauses reported pausing, want 1", paused)
	}
	if got, err := s.DueSchedules(ctx, due.Add(time.Hour), 10); err != nil || len(got) != 0 {
		t.Errorf("DueSchedules = %+v, %v; want the paused schedule left out", got, err)
	}
	all, err := s.Schedules(ctx, lane.SessionKey)
	if err != nil || len(all) != 1 || all[0].Paused != "its maker is no longer allowed" {
		t.Errorf("Schedules = %+v, %v; want it listed with its reason", all, err)
	}
	if n, next, err := s.CountSchedules(ctx); err != nil || n != 1 || !next.IsZero() {
		t.Errorf("CountSchedules = %d, %v, %v; want 1 and no next due time", n, next, err)
	}
}
