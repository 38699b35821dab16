package cluster

import (
	"testing"
	"time"
)

// NextChange is the earliest of another node's heartbeat going stale and
// the expiry of a named lease someone else holds; this node's own
// heartbeat and leases, expired leases and dead nodes do not count.
func TestNextChangeIsTheEarliestExpiryAnotherNodeLeaves(t *testing.T) {
	ctx := testContext(t)
	dsn := newDatabase(t)
	clock := installTestClock(t, dsn)
	a, b := newNode(t, dsn, "node-a"), newNode(t, dsn, "node-b")
	const ttl = 30 * time.Second
	near := func(got time.Duration, ok bool, want time.Duration) bool {
		return ok && got <= want && got > want-5*time.Second
	}

	if err := a.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, a, "lane:mine", 5*time.Second)
	if got, ok, err := a.NextChange(ctx, ttl, []string{"lane:mine"}); err != nil || ok {
		t.Fatalf("alone with its own lease: NextChange = %v, %v, %v; want nothing ahead", got, ok, err)
	}

	if err := b.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	mustAcquire(t, b, "lane:theirs", 10*time.Second)
	mustAcquire(t, b, "lane:unasked", time.Second)
	cases := []struct {
		name  string
		names []string
		want  time.Duration
	}{
		{"the lease, before the heartbeat", []string{"lane:mine", "lane:theirs"}, 10 * time.Second},
		{"no lease named: the heartbeat", nil, ttl},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := a.NextChange(ctx, ttl, tc.names)
			if err != nil || !near(got, ok, tc.want) {
				t.Fatalf("NextChange(%v) = %v, %v, %v; want just under %v", tc.names, got, ok, err, tc.want)
			}
		})
	}

	clock.Advance(12 * time.Second) // lane:theirs has expired: nothing to wait for
	got, ok, err := a.NextChange(ctx, ttl, []string{"lane:theirs"})
	if err != nil || !near(got, ok, ttl-12*time.Second) {
		t.Fatalf("after the lease expired: NextChange = %v, %v, %v; want b's heartbeat in just under %v", got, ok, err, ttl-12*time.Second)
	}
	clock.Advance(ttl) // b is dead too
	if got, ok, err := a.NextChange(ctx, ttl, []string{"lane:theirs"}); err != nil || ok {
		t.Fatalf("b dead, its lease expired: NextChange = %v, %v, %v; want nothing ahead", got, ok, err)
	}
	if _, _, err := a.NextChange(ctx, 0, nil); err == nil {
		t.Error("NextChange with ttl 0: no error")
	}
}
