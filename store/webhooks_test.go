package store

import (
	"context"
	"testing"
	"time"
)

// A body is claimed once per replay window: the same body under another
// delivery id is refused, the same delivery id (a redelivery) is not,
// another hook's identical body is its own, and a row older than the
// window is pruned so the body may run again.
func TestClaimWebhookBody(t *testing.T) {
	t.Parallel()
	s, clock := openTestStore(t)
	ctx := context.Background()
	const window = 24 * time.Hour
	claim := func(hook, sum, id string) bool {
		t.Helper()
		now := clock.Now()
		ok, err := s.ClaimWebhookBody(ctx, hook, sum, id, now, now.Add(-window))
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	steps := []struct {
		name          string
		hook, sum, id string
		advance       time.Duration
		want          bool
	}{
		{"first delivery", "gh", "aaaa", "d1", 0, true},
		{"redelivery, same id", "gh", "aaaa", "d1", 0, true},
		{"replay under a new id", "gh", "aaaa", "d2", 0, false},
		{"another body", "gh", "bbbb", "d3", 0, true},
		{"the same body on another hook", "ci", "aaaa", "d4", 0, true},
		{"replay just inside the window", "gh", "aaaa", "d5", window - time.Second, false},
		{"after the window", "gh", "aaaa", "d6", 2 * time.Second, true},
	}
	for _, st := range steps {
		clock.Advance(st.advance)
		if got := claim(st.hook, st.sum, st.id); got != st.want {
			t.Errorf("%s: claim = %v, want %v", st.name, got, st.want)
		}
	}
	// Pruned: gh's bbbb and ci's aaaa are older than the window now.
	if n := countRows(t, s, "SELECT COUNT(*) FROM webhook_bodies"); n != 1 {
		t.Errorf("%d rows kept, want 1 (older ones pruned)", n)
	}
	if _, err := s.ClaimWebhookBody(ctx, "gh", "", "d7", clock.Now(), clock.Now()); err == nil {
		t.Error("a claim without a hash was accepted")
	}
}
