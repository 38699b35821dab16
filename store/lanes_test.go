package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestEnsureLaneCreatesOnceAndTouches(t *testing.T) {
	t.Parallel()
	s, clock := openTestStore(t)
	ctx := context.Background()
	first := mustEnsure(t, s, "a")
	if first.Generation != 1 || first.SessionID == 0 || first.Binding != BindingNone || first.Turns != 0 {
		t.Fatalf("new lane = %+v, want generation 1, a session, no binding", first)
	}
	if first.Platform != "telegram" || first.Kind != "topic" || first.ChatID != "100" || first.TopicID != "a" {
		t.Fatalf("new lane address = %+v", first)
	}
	clock.Advance(time.Minute)
	again := mustEnsure(t, s, "a")
	if again.SessionID != first.SessionID || again.Generation != first.Generation {
		t.Fatalf("second EnsureLane changed the lane: %+v -> %+v", first, again)
	}
	if !again.LastActiveAt.Equal(first.LastActiveAt.Add(time.Minute)) {
		t.Fatalf("LastActiveAt = %v, want %v", again.LastActiveAt, first.LastActiveAt.Add(time.Minute))
	}
	got, err := s.Lane(ctx, first.SessionKey)
	if err != nil || got.SessionID != first.SessionID {
		t.Fatalf("Lane = %+v, %v", got, err)
	}
	if _, err := s.Lane(ctx, "missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("Lane(missing) err = %v, want ErrNotFound", err)
	}
	if _, err := s.EnsureLane(ctx, LaneKey{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("EnsureLane(empty) err = %v, want ErrInvalid", err)
	}
}

func TestLanesMostRecentlyActiveFirst(t *testing.T) {
	t.Parallel()
	s, clock := openTestStore(t)
	for _, name := range []string{"a", "b", "c"} {
		mustEnsure(t, s, name)
		clock.Advance(time.Second)
	}
	mustEnsure(t, s, "a") // a is now the most recent
	lanes, err := s.Lanes(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(lanes) != 2 || lanes[0].TopicID != "a" || lanes[1].TopicID != "c" {
		t.Fatalf("Lanes(2) = %v, want a then c", topicIDs(lanes))
	}
}

func topicIDs(lanes []Lane) []string {
	var ids []string
	for _, l := range lanes {
		ids = append(ids, l.TopicID)
	}
	return ids
}

func TestBindThreadAndStaleGenerations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name  string
		write func(s *Store, l Lane) error
	}{
		{"bind", func(s *Store, l Lane) error { return s.BindThread(ctx, l.SessionKey, l.Generation-1, "t-late") }},
		{"lost", func(s *Store, l Lane) error {
			return s.MarkBindingLost(ctx, l.SessionKey, l.Generation-1, "t-old", "no rollout")
		}},
		{"rotate", func(s *Store, l Lane) error {
			_, err := s.RotateSession(ctx, l.SessionKey, l.Generation-1, "idle", true)
			return err
		}},
		{"journal", func(s *Store, l Lane) error {
			return s.JournalTurn(ctx, JournalEntry{SessionKey: l.SessionKey, Generation: l.Generation - 1, TurnID: "x"})
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openTestStore(t)
			l := mustEnsure(t, s, "a")
			if err := s.BindThread(ctx, l.SessionKey, l.Generation, "t-old"); err != nil {
				t.Fatal(err)
			}
			reset, err := s.ResetLane(ctx, l.SessionKey, "/reset")
			if err != nil {
				t.Fatal(err)
			}
			if reset.Generation != l.Generation+1 || reset.ThreadID != "" || reset.Binding != BindingNone {
				t.Fatalf("after reset lane = %+v", reset)
			}
			if err := tc.write(s, reset); !errors.Is(err, ErrStaleGeneration) {
				t.Fatalf("late %s write err = %v, want ErrStaleGeneration", tc.name, err)
			}
			after, err := s.Lane(ctx, l.SessionKey)
			if err != nil {
				t.Fatal(err)
			}
			if after.ThreadID != "" || after.Binding != BindingNone || after.SessionID != reset.SessionID {
				t.Fatalf("stale write changed the lane: %+v", after)
			}
			if j, _ := s.Journal(ctx); len(j) != 0 {
				t.Fatalf("stale journal write stored %v", j)
			}
		})
	}
}

func TestBindingStates(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "a")
	if err := s.BindThread(ctx, l.SessionKey, l.Generation, "t1"); err != nil {
		t.Fatal(err)
	}
	assertBinding(t, s, l.SessionKey, "t1", BindingPending)
	l.ThreadID = "t1"
	res, err := s.CommitTurn(ctx, withConfirm(turn(l, "turn-1", "hi", "hello")))
	if err != nil || !res.Confirmed {
		t.Fatalf("CommitTurn = %+v, %v; want confirmed", res, err)
	}
	assertBinding(t, s, l.SessionKey, "t1", BindingConfirmed)
	// Re-binding the proven thread (a resume) keeps it confirmed.
	if err := s.BindThread(ctx, l.SessionKey, l.Generation, "t1"); err != nil {
		t.Fatal(err)
	}
	assertBinding(t, s, l.SessionKey, "t1", BindingConfirmed)
	if err := s.MarkBindingLost(ctx, l.SessionKey, l.Generation, "t-other", "x"); !errors.Is(err, ErrStaleGeneration) {
		t.Fatalf("MarkBindingLost(other thread) err = %v, want ErrStaleGeneration", err)
	}
	if err := s.MarkBindingLost(ctx, l.SessionKey, l.Generation, "t1", "no rollout found"); err != nil {
		t.Fatal(err)
	}
	assertBinding(t, s, l.SessionKey, "t1", BindingLost)
	// A late confirm of the lost thread must not resurrect it.
	res, err = s.CommitTurn(ctx, withConfirm(turn(l, "turn-2", "again", "reply")))
	if err != nil || res.Confirmed {
		t.Fatalf("CommitTurn on lost binding = %+v, %v; want not confirmed", res, err)
	}
	assertBinding(t, s, l.SessionKey, "t1", BindingLost)
	if err := s.BindThread(ctx, l.SessionKey, l.Generation, "t2"); err != nil {
		t.Fatal(err)
	}
	assertBinding(t, s, l.SessionKey, "t2", BindingPending)
}

func withConfirm(c CompletedTurn) CompletedTurn {
	c.Confirm = true
	return c
}

func assertBinding(t *testing.T, s *Store, key, thread string, b Binding) {
	t.Helper()
	l, err := s.Lane(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	if l.ThreadID != thread || l.Binding != b {
		t.Fatalf("binding = %q/%q, want %q/%q", l.ThreadID, l.Binding, thread, b)
	}
}

func TestRotateSession(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := []struct {
		name       string
		keepThread bool
		wantThread string
		wantGenInc int64
	}{
		{"keep thread", true, "t1", 0},
		{"fresh thread", false, "", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, clock := openTestStore(t)
			l := mustEnsure(t, s, "a")
			if err := s.BindThread(ctx, l.SessionKey, l.Generation, "t1"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.CommitTurn(ctx, turn(l, "turn-1", "q", "a")); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Hour)
			rotated, err := s.RotateSession(ctx, l.SessionKey, l.Generation, "daily", tc.keepThread)
			if err != nil {
				t.Fatal(err)
			}
			if rotated.SessionID == l.SessionID || rotated.ThreadID != tc.wantThread ||
				rotated.Generation != l.Generation+tc.wantGenInc || rotated.Turns != 0 {
				t.Fatalf("rotated lane = %+v", rotated)
			}
			if !rotated.SessionStartedAt.Equal(clock.Now()) {
				t.Fatalf("SessionStartedAt = %v, want %v", rotated.SessionStartedAt, clock.Now())
			}
			var parent int64
			var reason string
			err = s.rq.QueryRowContext(ctx, `SELECT n.parent_id, o.end_reason FROM sessions n
				JOIN sessions o ON o.id = n.parent_id WHERE n.id = ?`, rotated.SessionID).Scan(&parent, &reason)
			if err != nil || parent != l.SessionID || reason != "daily" {
				t.Fatalf("new session parent = %d reason %q (%v), want %d \"daily\"", parent, reason, err, l.SessionID)
			}
			if msgs, _ := s.Transcript(ctx, l.SessionKey, 0); len(msgs) != 0 {
				t.Fatalf("new session transcript = %v, want empty", msgs)
			}
		})
	}
}

func TestSetMeta(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "a")
	if err := s.SetMeta(ctx, l.SessionKey, map[string]string{"model": "gpt", "cwd": "/w"}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetMeta(ctx, l.SessionKey, map[string]string{"cwd": ""}); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Lane(ctx, l.SessionKey)
	if len(got.Meta) != 1 || got.Meta["model"] != "gpt" {
		t.Fatalf("Meta = %v, want only model=gpt", got.Meta)
	}
}

// TestAttachThreadRefusesAThreadAnotherLaneHolds: a lane attaches a thread
// no lane holds (pending) and is refused one another lane is bound to.
func TestAttachThreadRefusesAThreadAnotherLaneHolds(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	a, b := mustEnsure(t, s, "a"), mustEnsure(t, s, "b")
	if err := s.BindThread(ctx, a.SessionKey, a.Generation, "t-a"); err != nil {
		t.Fatal(err)
	}
	if err := s.AttachThread(ctx, b.SessionKey, b.Generation, "t-a"); !errors.Is(err, ErrThreadHeld) {
		t.Fatalf("attaching a's thread to b: %v, want ErrThreadHeld", err)
	}
	if claim, err := s.ThreadClaim(ctx, "t-a", b.SessionKey); err != nil || claim != (ThreadClaim{Lane: a.SessionKey, Held: true}) {
		t.Fatalf("ThreadClaim(t-a) = %+v, %v; want held by %q", claim, err, a.SessionKey)
	}
	if claim, _ := s.ThreadClaim(ctx, "t-a", a.SessionKey); claim != (ThreadClaim{}) {
		t.Fatalf("ThreadClaim excluding the holder = %+v", claim)
	}
	if err := s.AttachThread(ctx, b.SessionKey, b.Generation, "t-cli"); err != nil {
		t.Fatalf("attaching a free thread: %v", err)
	}
	if got, _ := s.Lane(ctx, b.SessionKey); got.ThreadID != "t-cli" || got.Binding != BindingPending {
		t.Fatalf("after attach b = %+v, want t-cli pending", got)
	}
	if err := s.AttachThread(ctx, b.SessionKey, b.Generation-1, "t-x"); !errors.Is(err, ErrStaleGeneration) {
		t.Fatalf("attach under an old generation: %v", err)
	}
}

// TestAttachThreadRefusesAThreadAnotherLaneLetGo: a thread a
// lane let go of — its binding lost, the lane reset, or replaced by
// another — stays that lane's: another lane is refused it, naming the
// lane, while the lane itself may come back to it.
func TestAttachThreadRefusesAThreadAnotherLaneLetGo(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	a, b := mustEnsure(t, s, "a"), mustEnsure(t, s, "b")
	bind := func(l Lane, thread string) {
		t.Helper()
		cur, _ := s.Lane(ctx, l.SessionKey)
		if err := s.BindThread(ctx, l.SessionKey, cur.Generation, thread); err != nil {
			t.Fatal(err)
		}
	}
	bind(a, "t-lost")
	if err := s.MarkBindingLost(ctx, a.SessionKey, a.Generation, "t-lost", "gone"); err != nil {
		t.Fatal(err)
	}
	bind(a, "t-reset")
	if _, err := s.ResetLane(ctx, a.SessionKey, "reset"); err != nil {
		t.Fatal(err)
	}
	bind(a, "t-replaced")
	bind(a, "t-now")
	cur, _ := s.Lane(ctx, b.SessionKey)
	for _, thread := range []string{"t-lost", "t-reset", "t-replaced"} {
		err := s.AttachThread(ctx, b.SessionKey, cur.Generation, thread)
		if !errors.Is(err, ErrThreadReleased) || !strings.Contains(err.Error(), a.SessionKey) {
			t.Errorf("attaching %s, which a let go of, to b: %v; want ErrThreadReleased naming a", thread, err)
		}
		if claim, err := s.ThreadClaim(ctx, thread, b.SessionKey); err != nil || claim != (ThreadClaim{Lane: a.SessionKey}) {
			t.Errorf("ThreadClaim(%s) = %+v, %v; want released by a", thread, claim, err)
		}
	}
	if got, _ := s.Lane(ctx, b.SessionKey); got.ThreadID != "" {
		t.Errorf("after the refusals b is on %q, want no thread", got.ThreadID)
	}
	acur, _ := s.Lane(ctx, a.SessionKey)
	if err := s.AttachThread(ctx, a.SessionKey, acur.Generation, "t-reset"); err != nil {
		t.Errorf("a coming back to its own thread: %v", err)
	}
}
