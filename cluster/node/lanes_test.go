package node

import (
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cluster"
)

// A lane is served while its lease is younger than the TTL by this node's
// clock, not by the database's: a node paused past its TTL stops sending
// before it hears the lease is gone. A renewal of the lease held (not of
// an older one) starts the TTL again.
func TestServesUntilTheTTLSinceTheLastRenewal(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	now := t0
	c := &Coordinator{ttl: time.Second, now: func() time.Time { return now },
		owned: map[string]heldLease{}, lost: map[string]cluster.Lease{}}
	l := cluster.Lease{Name: cluster.LanePrefix + "k", Token: 2}
	c.owned["k"] = heldLease{lease: l, renewed: t0}

	for _, step := range []struct {
		name  string
		at    time.Duration
		renew *cluster.Lease
		want  bool
	}{
		{name: "just taken", at: 0, want: true},
		{name: "just before the TTL", at: 999 * time.Millisecond, want: true},
		{name: "at the TTL", at: time.Second, want: false},
		{name: "an older lease renewed", at: time.Second, renew: &cluster.Lease{Name: l.Name, Token: 1}, want: false},
		{name: "the lease renewed", at: time.Second, renew: &l, want: true},
		{name: "a TTL after the renewal", at: 2 * time.Second, want: false},
	} {
		now = t0.Add(step.at)
		if step.renew != nil {
			c.renewed(*step.renew)
		}
		if got := c.Serves("k"); got != step.want {
			t.Errorf("%s: Serves = %v, want %v", step.name, got, step.want)
		}
	}
	if c.Serves("other") {
		t.Error("Serves a lane never taken")
	}
}
