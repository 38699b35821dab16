package cluster

import (
	"errors"
	"testing"
	"time"
)

// A second process with a live node's id is refused; one that names the
// live incarnation as its dead predecessor takes the node over and its
// leases at once, with new tokens: the old incarnation's fenced writes,
// renewals and heartbeats are then refused.
func TestJoinRefusesALiveNodeIDAndReclaimsADeadPredecessor(t *testing.T) {
	ctx := testContext(t)
	dsn := newDatabase(t)
	db := openDB(t, dsn)
	mustExec(t, db, createJournal)
	const ttl = time.Minute
	old := newNode(t, dsn, "node-a")
	if j, err := old.Join(ctx, ttl, ""); err != nil || j.Reclaimed != "" {
		t.Fatalf("first Join = %+v, %v", j, err)
	}
	lease := mustAcquire(t, old, "lane:x", ttl)

	other := newNode(t, dsn, "node-a")
	if _, err := other.Join(ctx, ttl, ""); !errors.Is(err, ErrNodeIDInUse) || !containsAll(err.Error(), "node-a", "ago") {
		t.Fatalf("Join beside a live node-a: err = %v, want ErrNodeIDInUse naming it", err)
	}
	if _, err := other.Join(ctx, ttl, "some-other-run"); !errors.Is(err, ErrNodeIDInUse) {
		t.Fatalf("Join naming a predecessor that is not the live one: err = %v, want ErrNodeIDInUse", err)
	}
	if _, ok, err := other.Acquire(ctx, "lane:x", ttl); err != nil || ok {
		t.Fatalf("refused node's Acquire = %v, %v; want the lease left alone", ok, err)
	}

	next := newNode(t, dsn, "node-a") // the restart of a crashed old
	j, err := next.Join(ctx, ttl, old.Incarnation())
	if err != nil || j.Reclaimed != old.Incarnation() {
		t.Fatalf("Join after the predecessor died = %+v, %v; want it reclaimed", j, err)
	}
	taken := mustAcquire(t, next, "lane:x", ttl) // not waiting out the TTL
	if taken.Token <= lease.Token {
		t.Fatalf("reclaimed token %d, want above the predecessor's %d", taken.Token, lease.Token)
	}
	if _, ok, err := next.Acquire(ctx, "lane:x", ttl); err != nil || ok {
		t.Fatalf("second Acquire of its own live lease = %v, %v; want refused", ok, err)
	}

	// The predecessor was only paused: everything it tries is refused.
	if err := writeJournal(ctx, db, lease, "late"); !errors.Is(err, ErrFenced) {
		t.Errorf("predecessor's fenced write: err = %v, want ErrFenced", err)
	}
	if err := old.Renew(ctx, lease, ttl); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("predecessor's renewal: err = %v, want ErrLeaseLost", err)
	}
	if err := old.Heartbeat(ctx); !errors.Is(err, ErrSuperseded) {
		t.Errorf("predecessor's heartbeat: err = %v, want ErrSuperseded", err)
	}
	if err := next.Heartbeat(ctx); err != nil {
		t.Errorf("new incarnation's heartbeat: %v", err)
	}
}

// A node id whose heartbeat has gone stale may be joined by anyone, but
// its unexpired leases are not taken early: only a predecessor known dead
// gives that.
func TestJoinAfterAStaleHeartbeatWaitsForTheLeases(t *testing.T) {
	ctx := testContext(t)
	dsn := newDatabase(t)
	clock := installTestClock(t, dsn)
	const ttl = 10 * time.Second
	old := newNode(t, dsn, "node-a")
	if _, err := old.Join(ctx, ttl, ""); err != nil {
		t.Fatal(err)
	}
	clock.Advance(ttl)                       // heartbeat stale
	mustAcquire(t, old, "lane:y", time.Hour) // but this lease still runs
	next := newNode(t, dsn, "node-a")
	if j, err := next.Join(ctx, ttl, ""); err != nil || j.Reclaimed != "" {
		t.Fatalf("Join over a stale heartbeat = %+v, %v; want joined, nothing reclaimed", j, err)
	}
	if _, ok, err := next.Acquire(ctx, "lane:y", ttl); err != nil || ok {
		t.Fatalf("Acquire of the unexpired lease = %v, %v; want it left to expire", ok, err)
	}
}
