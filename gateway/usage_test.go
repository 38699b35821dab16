package gateway

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/gatewayd/gatewayd/gateway/feature/usage"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// tokenObserver is an Observer that also counts tokens.
type tokenObserver struct {
	NopObserver
	mu     sync.Mutex
	counts map[string]int64 // "platform/kind" → tokens
}

func (o *tokenObserver) Tokens(platform, kind string, n int64) {
	o.mu.Lock()
	o.counts[platform+"/"+kind] += n
	o.mu.Unlock()
}

// usageFakeStore is the fake store with the usage of the last turn.
type usageFakeStore struct {
	*fakeStore
	mu   sync.Mutex
	last map[string]store.TurnUsage
}

func (s *usageFakeStore) CommitTurn(ctx context.Context, t store.CompletedTurn) (store.CommitResult, error) {
	s.mu.Lock()
	s.last[t.SessionKey] = store.TurnUsage{TurnID: t.TurnID, Status: t.Status, Usage: t.Usage}
	s.mu.Unlock()
	return s.fakeStore.CommitTurn(ctx, t)
}

func (s *usageFakeStore) LastTurnUsage(_ context.Context, key string) (store.TurnUsage, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tu, ok := s.last[key]
	return tu, ok, nil
}

// TestTurnUsageCountedRecordedAndShown: a turn's spend reaches the token
// counters by platform and kind and the store's usage record, and /status
// shows the stored context and last turn when codex has no live figures
// (after a restart).
func TestTurnUsageCountedRecordedAndShown(t *testing.T) {
	h := newHarness(t)
	obs := &tokenObserver{counts: map[string]int64{}}
	st := &usageFakeStore{fakeStore: h.st, last: map[string]store.TurnUsage{}}
	cfg := h.g.cfg
	cfg.Observer = obs
	g, err := New(withFeatures(cfg, usage.New(st, h.cx, nil)).WithDefaults(), st, h.cx)
	if err != nil {
		t.Fatal(err)
	}
	g.AddPlatform(h.p)
	h.g = g
	spend := codex.TokenCounts{Total: 4200, Input: 4100, CachedInput: 2900, Output: 100, Reasoning: 25}
	h.cx.run = func(_ context.Context, _, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "re: " + text, Usage: codex.Usage{
			TotalTokens: 5250, LastTotalTokens: 2170, ContextWindow: 10000, Turn: spend}}, nil
	}
	h.cx.usageFn = func(string) (codex.Usage, bool) { return codex.Usage{}, false } // as after a restart
	h.start(t)
	h.send(t, "a", "a1", "hello")
	h.p.replyTo(t, "a1")

	obs.mu.Lock()
	got := obs.counts
	obs.mu.Unlock()
	want := map[string]int64{"test/input": 4100, "test/cached": 2900, "test/output": 100, "test/reasoning": 25}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("tokens %s = %d, want %d (all: %v)", k, got[k], v, got)
		}
	}
	key := apiAddr("a").SessionKey()
	rec, _, _ := st.LastTurnUsage(context.Background(), key)
	wantRec := store.UsageRecord{TotalTokens: 5250, ContextWindow: 10000, TurnTokens: 4200, InputTokens: 4100,
		CachedInputTokens: 2900, OutputTokens: 100, ReasoningTokens: 25, ContextTokens: 2170}
	if rec.Usage != wantRec {
		t.Errorf("usage record = %+v, want %+v", rec.Usage, wantRec)
	}
	h.send(t, "a", "s1", "/status")
	status := h.p.replyTo(t, "s1").Text
	for _, line := range []string{
		"Context: 2170 / 10000 tokens (22%) after the last turn",
		"Last turn: 4200 tokens (input 4100, of which cached 2900; output 100, of which reasoning 25)",
	} {
		if !strings.Contains(status, line) {
			t.Errorf("/status:\n%s\nwant %q", status, line)
		}
	}
}
