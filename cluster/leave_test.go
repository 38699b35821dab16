package cluster

import (
	"errors"
	"slices"
	"testing"
	"time"
)

// A node that leaves (a clean stop) is out of placement at once, not a
// TTL after its last heartbeat: the others no longer see it live, place
// its lanes on themselves and take its leases without waiting. A later
// process with its id joins at once and is live again.
func TestLeavingNodeIsNeverPlaced(t *testing.T) {
	ctx := testContext(t)
	dsn := newDatabase(t)
	a, b := newNode(t, dsn, "node-a"), newNode(t, dsn, "node-b")
	const ttl = time.Minute // far longer than the test: nothing may wait for it
	for _, n := range []*Node{a, b} {
		if _, err := n.Join(ctx, ttl, ""); err != nil {
			t.Fatal(err)
		}
	}
	var key string
	for i := 0; key == ""; i++ {
		if k := "lane-" + string(rune('a'+i)); mustPlace(t, k, "node-a", "node-b") == "node-a" {
			key = k
		}
	}
	held := mustAcquire(t, a, LanePrefix+key, ttl)

	if err := a.Leave(ctx, []Lease{held}, ttl); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	live, err := b.LiveNodes(ctx, ttl)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(live, []string{"node-b"}) {
		t.Fatalf("live nodes after node-a left: %v, want only node-b", live)
	}
	if owner := mustPlace(t, key, live...); owner != "node-b" {
		t.Errorf("lane %s placed on %s after node-a left, want node-b", key, owner)
	}
	if _, ok, err := b.Acquire(ctx, LanePrefix+key, ttl); err != nil || !ok {
		t.Errorf("node-b taking the lane node-a left: ok=%v err=%v, want it free at once", ok, err)
	}
	if d, ok, err := b.NextChange(ctx, ttl, nil); err != nil || ok {
		t.Errorf("NextChange after node-a left = %v, %v, %v; want nothing ahead (node-a is gone already)", d, ok, err)
	}
	if err := a.Heartbeat(ctx); !errors.Is(err, errLeft) {
		t.Errorf("heartbeat after leaving: %v, want refused as left (not superseded)", err)
	}

	next := newNode(t, dsn, "node-a") // a new process, on a state_dir of its own
	if _, err := next.Join(ctx, ttl, ""); err != nil {
		t.Fatalf("a new process joining as the node that left: %v, want it in at once", err)
	}
	if live, _ := b.LiveNodes(ctx, ttl); !slices.Equal(live, []string{"node-a", "node-b"}) {
		t.Errorf("live nodes after node-a joined again: %v", live)
	}
}

func mustPlace(t *testing.T, key string, nodes ...string) string {
	t.Helper()
	owner, err := Place(key, nodes)
	if err != nil {
		t.Fatal(err)
	}
	return owner
}
