package store

import (
	"context"
	"errors"
	"slices"
	"testing"
)

// TestMarkCutOffAnnouncesOnceAndKeepsText: a cut-off turn is told once,
// and is the lane's turn to retry across any number of restarts and later
// turns, until a rerun of it is committed.
func TestMarkCutOffAnnouncesOnceAndKeepsText(t *testing.T) {
	t.Parallel()
	path := testDBPath(t)
	s := openAt(t, path, Options{})
	ctx := context.Background()
	l, _, e := journaledTurn(t, s, "build it")
	if _, ok, _ := s.RetryTurn(ctx, l.SessionKey); ok {
		t.Fatal("a running turn is reported as a turn to retry")
	}
	notice := OutboxMessage{SessionKey: l.SessionKey, Platform: "telegram", Text: "cut off"}
	if _, err := s.MarkCutOff(ctx, e, notice); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkCutOff(ctx, e, notice); !errors.Is(err, ErrStaleGeneration) {
		t.Fatalf("second MarkCutOff err = %v, want ErrStaleGeneration (told once)", err)
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM outbox"); n != 1 {
		t.Fatalf("outbox rows = %d, want exactly one notice", n)
	}
	if p, _ := s.PendingInbound(ctx); len(p) != 0 {
		t.Fatalf("pending inbound = %v, want the cut-off message closed", p)
	}
	s.Close()

	s = openAt(t, path, Options{}) // a restart
	j, err := s.Journal(ctx)
	if err != nil || len(j) != 1 || !j[0].CutOff {
		t.Fatalf("journal after restart = %+v, %v; want the entry marked cut off", j, err)
	}
	got, ok, err := s.RetryTurn(ctx, l.SessionKey)
	if err != nil || !ok || got.Text != "build it" || got.Reason != RetryCutOff || got.InboundID != e.InboundID {
		t.Fatalf("RetryTurn = %+v, %v, %v; want the cut-off text", got, ok, err)
	}
	// The lane's next turn (the API lane's next request, which carries the
	// notice) replaces the journal entry, not the turn to retry.
	e2 := JournalEntry{SessionKey: l.SessionKey, Generation: l.Generation, Text: "something else"}
	if err := s.JournalTurn(ctx, e2); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitTurn(ctx, CompletedTurn{SessionKey: l.SessionKey, Generation: l.Generation, TurnID: "t2",
		UserText: "something else", AssistantText: "ok", Status: "completed"}); err != nil {
		t.Fatal(err)
	}
	if again, ok, _ := s.RetryTurn(ctx, l.SessionKey); !ok || again != got {
		t.Fatalf("RetryTurn after another turn = %+v, %v; want still %+v", again, ok, got)
	}
}

func TestCutOffTurnIgnoresOldGeneration(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "a")
	e := JournalEntry{SessionKey: l.SessionKey, Generation: l.Generation, Text: "old"}
	if err := s.JournalTurn(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkCutOff(ctx, e, OutboxMessage{SessionKey: l.SessionKey, Platform: "telegram", Text: "n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResetLane(ctx, l.SessionKey, "/new"); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.RetryTurn(ctx, l.SessionKey); err != nil || ok {
		t.Fatalf("RetryTurn after /new = %+v, %v, %v; want none", got, ok, err)
	}
}

// TestResetClosesTheJournaledTurnsInbound: a reset wins over the running
// turn, so its inbound row is no longer pending for the next start.
func TestResetClosesTheJournaledTurnsInbound(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "a")
	in, _, err := s.RecordInbound(ctx, Inbound{Platform: "telegram", MessageID: "m1", SessionKey: l.SessionKey, Text: "job"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.JournalTurn(ctx, JournalEntry{SessionKey: l.SessionKey, Generation: l.Generation, InboundID: in, Text: "job"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ResetLane(ctx, l.SessionKey, "/new"); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.PendingInbound(ctx); len(p) != 0 {
		t.Fatalf("pending inbound after a reset = %+v, want the reset turn's message closed", p)
	}
}

// A lane whose only state is a cut-off turn already told (kept for /retry)
// has no work: a cluster node may hand it over, and the entry, durable in
// the store, is still there for the next owner's /retry. A running (or
// not yet told) turn and the pending notice are work.
func TestToldCutOffTurnIsNotWork(t *testing.T) {
	t.Parallel()
	s := openAt(t, testDBPath(t), Options{})
	ctx := context.Background()
	l, in, e := journaledTurn(t, s, "build it")
	if err := s.SetInboundState(ctx, in, InboundDone); err != nil {
		t.Fatal(err)
	}
	wantWork := func(when string, want bool) {
		t.Helper()
		keys, err := s.LanesWithWork(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var wantKeys []string
		if want {
			wantKeys = []string{l.SessionKey}
		}
		if !slices.Equal(keys, wantKeys) {
			t.Fatalf("%s: LanesWithWork = %v, want %v", when, keys, wantKeys)
		}
	}
	wantWork("turn running", true)
	notice, err := s.MarkCutOff(ctx, e, OutboxMessage{SessionKey: l.SessionKey, Platform: "telegram", Text: "cut off"})
	if err != nil {
		t.Fatal(err)
	}
	wantWork("notice pending", true)
	if err := s.MarkSent(ctx, notice, "p1"); err != nil {
		t.Fatal(err)
	}
	wantWork("cut-off turn told", false)
	if got, ok, err := s.RetryTurn(ctx, l.SessionKey); err != nil || !ok || got.Text != "build it" {
		t.Fatalf("RetryTurn = %+v, %v, %v; want it kept for /retry", got, ok, err)
	}
}

// journaledTurn records an inbound message in a new lane "a" and journals
// its turn as running.
func journaledTurn(t *testing.T, s *Store, text string) (Lane, int64, JournalEntry) {
	t.Helper()
	l := mustEnsure(t, s, "a")
	in, _, err := s.RecordInbound(context.Background(), Inbound{Platform: "telegram", MessageID: "m1", SessionKey: l.SessionKey, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	e := JournalEntry{SessionKey: l.SessionKey, Generation: l.Generation, InboundID: in, Text: text}
	if err := s.JournalTurn(context.Background(), e); err != nil {
		t.Fatal(err)
	}
	return l, in, e
}
