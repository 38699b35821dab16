package store

import (
	"context"
	"database/sql"
	"testing"
)

// cutOffTurn journals text on lane l as a running turn and marks it cut
// off, as a restart does; it returns the lane's turn to retry.
func cutOffTurn(t *testing.T, s *Store, l Lane, text string) RetryTurn {
	t.Helper()
	ctx := context.Background()
	in, _, err := s.RecordInbound(ctx, Inbound{Platform: "telegram", MessageID: "m-" + text, SessionKey: l.SessionKey, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	e := JournalEntry{SessionKey: l.SessionKey, Generation: l.Generation, InboundID: in, Text: text}
	if err := s.JournalTurn(ctx, e); err != nil {
		t.Fatal(err)
	}
	if _, err := s.MarkCutOff(ctx, e, OutboxMessage{SessionKey: l.SessionKey, Platform: "telegram", Text: "cut off"}); err != nil {
		t.Fatal(err)
	}
	r, ok, err := s.RetryTurn(ctx, l.SessionKey)
	if err != nil || !ok || r.Text != text || r.Reason != RetryCutOff {
		t.Fatalf("RetryTurn after the cut-off = %+v, %v, %v; want %q", r, ok, err, text)
	}
	return r
}

// TestRetryTurnIsMarkedByItsRerun: the commit of the rerun marks the turn
// retried, durably: after a restart there is still nothing to retry, and a
// second commit naming it changes nothing.
func TestRetryTurnIsMarkedByItsRerun(t *testing.T) {
	t.Parallel()
	path := testDBPath(t)
	s := openAt(t, path, Options{})
	ctx := context.Background()
	l := mustEnsure(t, s, "a")
	r := cutOffTurn(t, s, l, "build it")
	rerun := CompletedTurn{SessionKey: l.SessionKey, Generation: l.Generation, TurnID: "rerun",
		UserText: r.Text, AssistantText: "built", Status: "completed", Retries: &r}
	if _, err := s.CommitTurn(ctx, rerun); err != nil {
		t.Fatal(err)
	}
	if got, ok, err := s.RetryTurn(ctx, l.SessionKey); err != nil || ok {
		t.Fatalf("RetryTurn after the rerun = %+v, %v, %v; want none", got, ok, err)
	}
	s.Close()
	s = openAt(t, path, Options{})
	if got, ok, err := s.RetryTurn(ctx, l.SessionKey); err != nil || ok {
		t.Fatalf("RetryTurn after the rerun and a restart = %+v, %v, %v; want none", got, ok, err)
	}
	rerun.TurnID = "rerun-again"
	if _, err := s.CommitTurn(ctx, rerun); err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := s.RetryTurn(ctx, l.SessionKey); ok {
		t.Fatalf("a second commit of a rerun revived the turn to retry: %+v", got)
	}
}

// TestTimedOutTurnIsRetryableAndTheNewestWins: a timed-out turn becomes
// the lane's turn to retry, a later cut-off replaces it, a rerun that
// times out again is retryable again, and marking an older turn leaves
// the newer one alone. A stale timed-out commit (the lane was reset during
// the turn) records nothing.
func TestTimedOutTurnIsRetryableAndTheNewestWins(t *testing.T) {
	t.Parallel()
	s, clock := openTestStore(t)
	ctx := context.Background()
	l := mustEnsure(t, s, "a")
	timedOut := CompletedTurn{SessionKey: l.SessionKey, Generation: l.Generation, TurnID: "t1", InboundID: 7,
		UserText: "slow job", AssistantText: "too long", Status: "timed_out", Retryable: true}
	if _, err := s.CommitTurn(ctx, timedOut); err != nil {
		t.Fatal(err)
	}
	slow, ok, err := s.RetryTurn(ctx, l.SessionKey)
	if err != nil || !ok || slow.Text != "slow job" || slow.Reason != RetryTimedOut || slow.InboundID != 7 {
		t.Fatalf("RetryTurn after a timeout = %+v, %v, %v; want the slow job", slow, ok, err)
	}
	clock.Advance(1)
	cut := cutOffTurn(t, s, l, "cut job") // replaces the slow job
	clock.Advance(1)
	again := CompletedTurn{SessionKey: l.SessionKey, Generation: l.Generation, TurnID: "t3",
		UserText: cut.Text, AssistantText: "too long", Status: "timed_out", Retries: &cut, Retryable: true}
	if _, err := s.CommitTurn(ctx, again); err != nil {
		t.Fatal(err)
	}
	got, ok, err := s.RetryTurn(ctx, l.SessionKey)
	if err != nil || !ok || got.Text != "cut job" || got.Reason != RetryTimedOut || !got.At.After(cut.At) {
		t.Fatalf("RetryTurn after the rerun timed out = %+v, %v, %v; want the cut job, timed out", got, ok, err)
	}
	if _, err := s.CommitTurn(ctx, CompletedTurn{SessionKey: l.SessionKey, Generation: l.Generation, TurnID: "t4",
		UserText: "x", AssistantText: "y", Status: "completed", Retries: &slow}); err != nil {
		t.Fatal(err)
	}
	if now, ok, _ := s.RetryTurn(ctx, l.SessionKey); !ok || now != got {
		t.Fatalf("marking an older turn retried changed the newest: %+v, %v; want %+v", now, ok, got)
	}

	if _, err := s.ResetLane(ctx, l.SessionKey, "/new"); err != nil {
		t.Fatal(err)
	}
	timedOut.TurnID = "t5" // of the generation the reset left
	if res, err := s.CommitTurn(ctx, timedOut); err != nil || !res.Stale {
		t.Fatalf("stale timed-out commit = %+v, %v", res, err)
	}
	if r, ok, _ := s.RetryTurn(ctx, l.SessionKey); ok {
		t.Fatalf("a stale timed-out turn became the turn to retry: %+v", r)
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM retry_turns WHERE session_key = ?", l.SessionKey); n != 0 {
		t.Fatalf("retry_turns rows after the reset = %d, want the lane's dropped", n)
	}
}

// TestMigrationCarriesTurnsToRetry: a database from before retry_turns
// keeps what /retry ran then: the cut-off entry in the journal, or the
// lane's last turn when it timed out.
func TestMigrationCarriesTurnsToRetry(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "SQLite's migration history (PostgreSQL runs the same carry-over)")
	ctx := context.Background()
	path := testDBPath(t)
	createAtVersion(t, path, 15)
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(ctx, `
		INSERT INTO turn_journal (session_key, generation, inbound_id, text, started_at, cut_off)
			VALUES ('old', 1, 3, 'cut before the upgrade', 5, 1);
		INSERT INTO messages (session_id, session_key, role, text, turn_id, created_at)
			VALUES (2, 'v1:discord:channel:5:user:42', 'user', 'slow before the upgrade', 't9', 6);
		INSERT INTO messages (session_id, session_key, role, text, turn_id, status, created_at)
			VALUES (2, 'v1:discord:channel:5:user:42', 'assistant', 'too long', 't9', 'timed_out', 6);`)
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	s := openAt(t, path, Options{})
	for key, want := range map[string]RetryTurn{
		"old": {SessionKey: "old", Generation: 1, InboundID: 3, Text: "cut before the upgrade", Reason: RetryCutOff, At: fromDB(5)},
		"v1:discord:channel:5:user:42": {SessionKey: "v1:discord:channel:5:user:42", Generation: 1,
			Text: "slow before the upgrade", Reason: RetryTimedOut, At: fromDB(6)},
	} {
		if got, ok, err := s.RetryTurn(ctx, key); err != nil || !ok || got != want {
			t.Errorf("RetryTurn(%s) after the upgrade = %+v, %v, %v; want %+v", key, got, ok, err, want)
		}
	}
}
