package store

import (
	"context"
	"fmt"
	"reflect"
	"testing"
)

// ThreadTurns reads back the committed turns of one thread, newest first,
// with the messages steered into them: not a turn of another thread, not
// one codex never started (no rollout thread), not more than asked.
func TestThreadTurnsAreTheTurnsTheThreadsRolloutHolds(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "a")
	commit := func(ct CompletedTurn, thread string) {
		t.Helper()
		ct.RolloutThread = thread
		if _, err := s.CommitTurn(ctx, ct); err != nil {
			t.Fatal(err)
		}
	}
	commit(turn(l, "t0", "on the old thread", "old"), "thread-old")
	commit(turn(l, "t1", "one", "answer one"), "thread-a")
	steered := turn(l, "t2", "two", "answer two")
	steered.Steered = []SteeredInput{{Text: "two, steered"}, {Text: "two, steered again"}}
	commit(steered, "thread-a")
	commit(turn(l, "gw-inbound-9", "codex never started it", "error"), "")
	commit(turn(l, "t3", "three", "answer three"), "thread-a")

	got, err := s.ThreadTurns(ctx, l.SessionKey, "thread-a", 2)
	if err != nil {
		t.Fatal(err)
	}
	want := []ThreadTurn{
		{TurnID: "t3", User: []string{"three"}, Assistant: "answer three"},
		{TurnID: "t2", User: []string{"two", "two, steered", "two, steered again"}, Assistant: "answer two"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ThreadTurns(thread-a, 2) = %+v, want %+v", got, want)
	}
	if all, err := s.ThreadTurns(ctx, l.SessionKey, "thread-a", 10); err != nil || len(all) != 3 || all[2].TurnID != "t1" {
		t.Errorf("ThreadTurns(thread-a, 10) = %+v, %v; want t3, t2, t1", all, err)
	}
	if none, err := s.ThreadTurns(ctx, l.SessionKey, "", 10); err != nil || len(none) != 0 {
		t.Errorf("ThreadTurns of no thread = %+v, %v; want none", none, err)
	}
}

// BenchmarkThreadTurns is what a takeover reads to check the restored
// rollout: the last 8 turns of a thread, on a lane with 10,000 committed
// turns, most of them on an older thread.
func BenchmarkThreadTurns(b *testing.B) {
	s, _ := openTestStore(b)
	ctx := context.Background()
	l := mustEnsure(b, s, "a")
	const turns = 10000
	for i := range turns {
		ct := turn(l, fmt.Sprintf("t%d", i), "question", "answer")
		ct.RolloutThread = "thread-old"
		if i >= turns-20 {
			ct.RolloutThread = "thread-new"
		}
		if _, err := s.CommitTurn(ctx, ct); err != nil {
			b.Fatal(err)
		}
	}
	for _, thread := range []string{"thread-new", "thread-none"} {
		b.Run(thread, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.ThreadTurns(ctx, l.SessionKey, thread, 8); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
