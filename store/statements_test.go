package store

import (
	"context"
	"errors"
	"testing"
)

// TestStatementsPerMessage pins what the four writes of a message (three
// durable, then the lazy sent mark) cost the database, transaction control
// and the synchronous switches between them included: every statement is
// CPU on the writer, so a new one should be a decision, not an accident.
// The journal entry is one upsert guarded by the generation, the turn's
// assistant row is written with its outbox id (no update after), and the
// next part of a reply is one insert with its gap check inside.
func TestStatementsPerMessage(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "a")
	if err := s.BindThread(ctx, l.SessionKey, l.Generation, "thread-a"); err != nil {
		t.Fatal(err)
	}
	l.ThreadID = "thread-a"
	cost := func(what string, want int64, write func() error) {
		t.Helper()
		before := s.Statements()
		if err := write(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got := s.Statements() - before; got != want {
			t.Errorf("%s: %d statements, want %d", what, got, want)
		}
	}
	// Two messages: the first confirms the binding, the second is every
	// turn after.
	for i, msg := range []string{"m1", "m2"} {
		var inbound int64
		// (PRAGMA synchronous = FULL after the last message's lazy sent
		// mark,) BEGIN, lane activity, INSERT, COMMIT
		cost(msg+" RecordInbound", 4+int64(i)*syncSwitch(s), func() (err error) {
			inbound, _, err = s.RecordInbound(ctx, Inbound{Platform: "telegram", MessageID: msg, SessionKey: l.SessionKey,
				Text: "hi", Lane: testLaneKey("a")})
			return err
		})
		cost(msg+" JournalTurn", 3, func() error { // BEGIN, upsert, COMMIT
			return s.JournalTurn(ctx, JournalEntry{SessionKey: l.SessionKey, Generation: l.Generation, InboundID: inbound,
				ThreadID: l.ThreadID, TurnID: "turn-" + msg, Text: "hi"})
		})
		ct := turn(l, "turn-"+msg, "hi", "hello")
		ct.InboundID, ct.UserMessageID, ct.Confirm = inbound, msg, true
		ct.Reply = &OutboxMessage{Text: "hello"}
		var res CommitResult
		// BEGIN, lane, user row, the notices told during the turn (to move
		// them after it), journal, inbox, outbox, assistant row, (binding,
		// first turn only), turns, COMMIT
		cost(msg+" CommitTurn", 11-int64(i), func() (err error) {
			res, err = s.CommitTurn(ctx, ct)
			return err
		})
		if !res.Confirmed || res.OutboxID == 0 {
			t.Fatalf("%s: CommitTurn = %+v, want confirmed with an outbox row", msg, res)
		}
		if again, err := s.CommitTurn(ctx, ct); err != nil || !again.Duplicate || again.OutboxID != res.OutboxID {
			t.Fatalf("%s: second CommitTurn = %+v, %v; want Duplicate with outbox %d", msg, again, err, res.OutboxID)
		}
		// (PRAGMA synchronous = NORMAL,) BEGIN, part, sent, COMMIT
		cost(msg+" MarkSentWithPart", 4+syncSwitch(s), func() error {
			return s.MarkSentWithPart(ctx, res.OutboxID, 0, "1:"+msg)
		})
	}
}

// syncSwitch is the statement a switch between durable and lazy commits
// costs: a PRAGMA synchronous on SQLite, nothing on PostgreSQL, where
// every commit is durable.
func syncSwitch(s *Store) int64 {
	if s.d == sqliteDialect {
		return 1
	}
	return 0
}

// The one-statement journal write still says why it wrote nothing.
func TestJournalTurnRefusals(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "a")
	err := s.JournalTurn(ctx, JournalEntry{SessionKey: "v1:telegram:topic:100:nobody", Generation: 1, TurnID: "x"})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("journal on an unknown lane: err = %v, want ErrNotFound", err)
	}
	err = s.JournalTurn(ctx, JournalEntry{SessionKey: l.SessionKey, Generation: l.Generation + 1, TurnID: "x"})
	if !errors.Is(err, ErrStaleGeneration) {
		t.Errorf("journal of another generation: err = %v, want ErrStaleGeneration", err)
	}
	if j, _ := s.Journal(ctx); len(j) != 0 {
		t.Errorf("journal after refusals = %+v, want empty", j)
	}
	e := JournalEntry{SessionKey: l.SessionKey, Generation: l.Generation, InboundID: 7, ThreadID: "t", TurnID: "u1", Text: "one"}
	if err := s.JournalTurn(ctx, e); err != nil {
		t.Fatal(err)
	}
	e.TurnID, e.Text = "u2", "two"
	if err := s.JournalTurn(ctx, e); err != nil {
		t.Fatal(err)
	}
	if j, _ := s.Journal(ctx); len(j) != 1 || j[0].TurnID != "u2" || j[0].Text != "two" || j[0].InboundID != 7 {
		t.Errorf("journal after two entries = %+v, want the second only", j)
	}
}
