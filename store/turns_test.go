package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestCommitTurnExactlyOnce(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "a")
	in, _, err := s.RecordInbound(ctx, Inbound{Platform: "telegram", MessageID: "m1", SessionKey: l.SessionKey, Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.JournalTurn(ctx, JournalEntry{SessionKey: l.SessionKey, Generation: l.Generation, InboundID: in, Text: "hi"}); err != nil {
		t.Fatal(err)
	}
	ct := turn(l, "turn-1", "hi", "hello there")
	ct.InboundID = in
	ct.UserMessageID = "m1"
	ct.Reply = &OutboxMessage{Text: "hello there"}
	first, err := s.CommitTurn(ctx, ct)
	if err != nil {
		t.Fatal(err)
	}
	if first.Duplicate || first.Stale || first.OutboxID == 0 {
		t.Fatalf("first commit = %+v", first)
	}
	second, err := s.CommitTurn(ctx, ct)
	if err != nil {
		t.Fatal(err)
	}
	if !second.Duplicate || second.OutboxID != first.OutboxID {
		t.Fatalf("second commit = %+v, want Duplicate with outbox %d", second, first.OutboxID)
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM messages WHERE turn_id = 'turn-1'"); n != 2 {
		t.Fatalf("rows for turn-1 = %d, want 2 (one user, one assistant)", n)
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM outbox"); n != 1 {
		t.Fatalf("outbox rows = %d, want 1", n)
	}
	msgs, err := s.Transcript(ctx, l.SessionKey, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || msgs[0].Role != "user" || msgs[0].PlatformMessageID != "m1" || msgs[1].Text != "hello there" {
		t.Fatalf("transcript = %+v", msgs)
	}
	got, _ := s.Lane(ctx, l.SessionKey)
	if got.Turns != 1 {
		t.Fatalf("Turns = %d, want 1", got.Turns)
	}
	if j, _ := s.Journal(ctx); len(j) != 0 {
		t.Fatalf("journal after commit = %v, want empty", j)
	}
	if p, _ := s.PendingInbound(ctx); len(p) != 0 {
		t.Fatalf("pending inbound after commit = %v, want none (done)", p)
	}
	due, _ := s.DueOutbox(ctx, time.Now(), 10)
	if len(due) != 1 || due[0].Platform != "telegram" || due[0].TopicID != "a" || due[0].SessionKey != l.SessionKey {
		t.Fatalf("reply not addressed from the lane: %+v", due)
	}
}

// TestLateCommitAfterReset is the seed failure: a turn running when the lane
// was reset finishes afterwards and must not bind, confirm or reply.
func TestLateCommitAfterReset(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	old := mustEnsure(t, s, "a")
	if err := s.BindThread(ctx, old.SessionKey, old.Generation, "t-old"); err != nil {
		t.Fatal(err)
	}
	old.ThreadID = "t-old"
	reset, err := s.ResetLane(ctx, old.SessionKey, "/reset")
	if err != nil {
		t.Fatal(err)
	}
	// The new generation's turn is in flight and journaled.
	if err := s.JournalTurn(ctx, JournalEntry{SessionKey: reset.SessionKey, Generation: reset.Generation, TurnID: "new-1"}); err != nil {
		t.Fatal(err)
	}
	late := withConfirm(turn(old, "old-1", "q", "late answer"))
	late.Reply = &OutboxMessage{Text: "late answer"}
	res, err := s.CommitTurn(ctx, late)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Stale || res.Confirmed || res.OutboxID != 0 {
		t.Fatalf("late commit = %+v, want Stale only", res)
	}
	if err := s.BindThread(ctx, old.SessionKey, old.Generation, "t-old"); !errors.Is(err, ErrStaleGeneration) {
		t.Fatalf("late BindThread err = %v", err)
	}
	lane, _ := s.Lane(ctx, old.SessionKey)
	if lane.ThreadID != "" || lane.Binding != BindingNone || lane.Turns != 0 {
		t.Fatalf("late writes resurrected the binding: %+v", lane)
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM outbox"); n != 0 {
		t.Fatalf("stale reply enqueued (%d rows)", n)
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM messages WHERE turn_id = 'old-1' AND session_id = ?", old.SessionID); n != 2 {
		t.Fatalf("stale turn rows in old session = %d, want 2", n)
	}
	if j, _ := s.Journal(ctx); len(j) != 1 || j[0].TurnID != "new-1" {
		t.Fatalf("stale commit touched the new turn's journal: %+v", j)
	}
}

func TestCommitTurnValidation(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "a")
	tests := []struct {
		name string
		ct   CompletedTurn
		want error
	}{
		{"no turn id", turn(l, "", "q", "a"), ErrInvalid},
		{"no lane", CompletedTurn{SessionKey: "nope", TurnID: "t"}, ErrNotFound},
		{"foreign session", func() CompletedTurn { c := turn(l, "t", "q", "a"); c.SessionID = 9999; return c }(), ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.CommitTurn(ctx, tc.ct); !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestTranscriptLimitAndSearch(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	a, b := mustEnsure(t, s, "a"), mustEnsure(t, s, "b")
	for i, text := range []string{"the amber word", "banana split", "quoted \"amber\" AND OR"} {
		if _, err := s.CommitTurn(ctx, turn(a, "a"+string(rune('0'+i)), text, "ok")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.CommitTurn(ctx, turn(b, "b0", "remember amber", "noted")); err != nil {
		t.Fatal(err)
	}
	last, err := s.Transcript(ctx, a.SessionKey, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(last) != 2 || last[0].Text != "quoted \"amber\" AND OR" || last[1].Text != "ok" {
		t.Fatalf("Transcript(2) = %+v, want last user+assistant rows oldest first", last)
	}
	tests := []struct {
		name  string
		query string
		want  int
	}{
		{"one word across lanes", "amber", 3},
		{"all words", "amber word", 1},
		{"fts syntax taken as words", `"amber" AND (`, 1},
		{"operators as words", "AND OR", 1},
		{"no match", "kiwi", 0},
		{"empty", "   ", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Search(ctx, tc.query, 10)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tc.want {
				t.Fatalf("Search(%q) = %d hits %+v, want %d", tc.query, len(got), got, tc.want)
			}
			for _, m := range got {
				if !strings.Contains(strings.ToLower(m.Text), strings.ToLower(strings.Fields(tc.query)[0])) {
					t.Fatalf("hit %q does not contain the query", m.Text)
				}
			}
		})
	}
}

func TestJournalLifecycle(t *testing.T) {
	t.Parallel()
	s, clock := openTestStore(t)
	ctx := context.Background()
	a, b := mustEnsure(t, s, "a"), mustEnsure(t, s, "b")
	if err := s.JournalTurn(ctx, JournalEntry{SessionKey: a.SessionKey, Generation: a.Generation, InboundID: 7, Text: "first"}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Second)
	// Upsert: the turn id arrives once the turn started.
	if err := s.JournalTurn(ctx, JournalEntry{SessionKey: a.SessionKey, Generation: a.Generation, InboundID: 7, ThreadID: "th", TurnID: "tu", Text: "first"}); err != nil {
		t.Fatal(err)
	}
	if err := s.JournalTurn(ctx, JournalEntry{SessionKey: b.SessionKey, Generation: b.Generation, Text: "second"}); err != nil {
		t.Fatal(err)
	}
	j, err := s.Journal(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(j) != 2 || j[0].TurnID != "tu" || j[0].InboundID != 7 || j[1].Text != "second" || !j[0].StartedAt.Equal(clock.Now()) {
		t.Fatalf("journal = %+v", j)
	}
	if err := s.ClearJournal(ctx, a.SessionKey); err != nil {
		t.Fatal(err)
	}
	if j, _ := s.Journal(ctx); len(j) != 1 || j[0].SessionKey != b.SessionKey {
		t.Fatalf("journal after clear = %+v", j)
	}
}

func TestRecordCompaction(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "a")
	if err := s.RecordCompaction(ctx, l.SessionKey, "th", 200000, 30000); err != nil {
		t.Fatal(err)
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM compactions WHERE session_id = ? AND tokens_after < tokens_before", l.SessionID); n != 1 {
		t.Fatalf("compactions = %d, want 1", n)
	}
	if err := s.RecordCompaction(ctx, "missing", "th", 1, 1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("RecordCompaction(missing) err = %v", err)
	}
}
