package store

import (
	"context"
	"testing"
)

// RecordInboundTurn records the message and its lane's journal entry in
// one commit, at the generation and thread the lane has then; a duplicate
// writes no entry and leaves the lane's entry alone.
func TestRecordInboundTurnJournalsInTheSameCommit(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "a")
	if err := s.BindThread(ctx, l.SessionKey, l.Generation, "thread-a"); err != nil {
		t.Fatal(err)
	}
	in := Inbound{Platform: "telegram", MessageID: "m1", SessionKey: l.SessionKey, Text: "hi", Lane: testLaneKey("a")}
	commits, statements := s.Commits(), s.Statements()
	id, dup, e, err := s.RecordInboundTurn(ctx, in, "hi [file]")
	if err != nil || dup || e == nil {
		t.Fatalf("RecordInboundTurn = %d, %v, %+v, %v", id, dup, e, err)
	}
	if got := s.Commits() - commits; got != 1 {
		t.Errorf("%d commits, want 1", got)
	}
	// BEGIN, lane activity, INSERT inbox, journal upsert, COMMIT
	if got := s.Statements() - statements; got != 5 {
		t.Errorf("%d statements, want 5", got)
	}
	if e.Generation != l.Generation || e.ThreadID != "thread-a" || e.InboundID != id || e.Text != "hi [file]" {
		t.Errorf("entry %+v, want generation %d, thread-a, inbound %d, the turn's text", e, l.Generation, id)
	}
	journal, err := s.Journal(ctx)
	if err != nil || len(journal) != 1 || journal[0].InboundID != id || journal[0].Generation != l.Generation ||
		journal[0].ThreadID != "thread-a" || journal[0].Text != "hi [file]" {
		t.Fatalf("journal = %+v, %v; want the entry of inbound %d", journal, err, id)
	}

	again, dup, e2, err := s.RecordInboundTurn(ctx, in, "other")
	if err != nil || !dup || again != id || e2 != nil {
		t.Fatalf("duplicate: %d, %v, %+v, %v; want inbound %d, duplicate, no entry", again, dup, e2, err, id)
	}
	if journal, _ := s.Journal(ctx); len(journal) != 1 || journal[0].Text != "hi [file]" {
		t.Errorf("a duplicate changed the journal: %+v", journal)
	}
	if _, _, _, err := s.RecordInboundTurn(ctx, Inbound{Platform: "telegram", MessageID: "m2", SessionKey: l.SessionKey}, "x"); err == nil {
		t.Error("RecordInboundTurn without the lane: no error")
	}
}
