package gateway

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway/outbox"
	"github.com/gatewayd/gatewayd/store"
)

// DueOutboxFor is the real store's: DueOutbox restricted to some lanes.
func (s *fakeStore) DueOutboxFor(_ context.Context, now time.Time, keys []string, limit int) ([]store.OutboxMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.OutboxMessage
	for _, m := range s.outbox {
		if m.State == store.OutboxPending && !s.held[m.ID] && !m.NextAttemptAt.After(now) &&
			slices.Contains(keys, m.SessionKey) && len(out) < limit {
			m.SentParts = slices.Clone(m.SentParts)
			out = append(out, m)
		}
	}
	return out, nil
}

// More than a batch of other nodes' due rows ahead of ours must not hide
// ours: the deliverer reads only the rows of the lanes the gate lists
// (filtering a batch of 50 after the read would find none of ours and
// stop there).
func TestOwnedLanesOutboxIsNotStarvedByOtherNodesRows(t *testing.T) {
	h := newHarness(t)
	mine := apiAddr("mine")
	gate := &fakeGate{serving: map[string]bool{mine.SessionKey(): true}}
	h.g.SetLaneGate(gate)
	ctx := context.Background()
	enqueue := func(a Address, text string) {
		t.Helper()
		if _, err := h.st.Enqueue(ctx, store.OutboxMessage{SessionKey: a.SessionKey(), Platform: a.Platform,
			Kind: string(a.Kind), ChatID: a.ChatID, Text: text, OutKind: store.OutboxReply}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range outbox.Batch + 10 {
		enqueue(apiAddr(fmt.Sprintf("theirs-%d", i)), "to theirs")
	}
	enqueue(mine, "to mine")
	h.start(t)
	h.g.out.Poke()
	if got := h.p.next(t); got.Text != "to mine" {
		t.Fatalf("delivered %q, want the owned lane's row", got.Text)
	}
}
