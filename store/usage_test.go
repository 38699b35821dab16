package store

import (
	"context"
	"testing"
)

// TestLastTurnUsage commits turns with and without usage on real SQLite and
// reads back the latest one that has some, across a reopen; a new session
// (/new) starts with none.
func TestLastTurnUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := testDBPath(t)
	s := openAt(t, path, Options{})
	l := mustEnsure(t, s, "a")
	if _, ok, err := s.LastTurnUsage(ctx, l.SessionKey); err != nil || ok {
		t.Fatalf("usage of a lane without turns = %v, %v; want none", ok, err)
	}
	first := turn(l, "turn-1", "hi", "hello")
	first.Usage = UsageRecord{TotalTokens: 1050, ContextWindow: 258400, TurnTokens: 1050, InputTokens: 1000,
		CachedInputTokens: 200, OutputTokens: 50, ReasoningTokens: 10, ContextTokens: 1050}
	second := turn(l, "turn-2", "again", "hello again")
	second.Usage = UsageRecord{TotalTokens: 5250, ContextWindow: 258400, TurnTokens: 4200, InputTokens: 4100,
		CachedInputTokens: 2900, OutputTokens: 100, ReasoningTokens: 25, ContextTokens: 2170}
	failed := turn(l, "turn-3", "more", "Codex usage limit reached")
	failed.Status = "failed" // failed before the model counted anything: no usage
	for _, ct := range []CompletedTurn{first, second, failed} {
		if _, err := s.CommitTurn(ctx, ct); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s = openAt(t, path, Options{})
	got, ok, err := s.LastTurnUsage(ctx, l.SessionKey)
	if err != nil || !ok {
		t.Fatalf("LastTurnUsage = %v, %v; want the second turn's", ok, err)
	}
	if got.TurnID != "turn-2" || got.Status != "completed" || got.Usage != second.Usage || got.At.IsZero() {
		t.Errorf("LastTurnUsage = %+v, want turn-2 with %+v", got, second.Usage)
	}
	if n := countRows(t, s, "SELECT COUNT(*) FROM messages WHERE role = 'user' AND turn_tokens > 0"); n != 0 {
		t.Errorf("%d user rows carry usage, want none (it belongs to the assistant row)", n)
	}

	if _, err := s.ResetLane(ctx, l.SessionKey, "/new"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.LastTurnUsage(ctx, l.SessionKey); err != nil || ok {
		t.Errorf("usage after /new = %v, %v; want none (a new session)", ok, err)
	}
	if _, _, err := s.LastTurnUsage(ctx, "v1:telegram:topic:100:nope"); err == nil {
		t.Error("LastTurnUsage of an unknown lane succeeded")
	}
}
