package cluster

import (
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// keeperEvent is one callback of a keeper under test, with the round trips
// its node had made by then.
type keeperEvent struct {
	kind  string // "lost", "lapsed" or "renewed"
	lease Lease
	err   error
	trips int64
}

// watchKeeper starts a keeper for n whose callbacks arrive on the returned
// channel (interval 0: the default); with lapse it keeps the leases it cannot renew (OnLapse).
func watchKeeper(t *testing.T, n *Node, trips *atomic.Int64, ttl, interval time.Duration, lapse bool) (*Keeper, <-chan keeperEvent) {
	t.Helper()
	ev := make(chan keeperEvent, 1024)
	send := func(kind string, l Lease, err error) {
		select {
		case ev <- keeperEvent{kind: kind, lease: l, err: err, trips: trips.Load()}:
		default: // renewals the test no longer reads
		}
	}
	opts := KeeperOptions{TTL: ttl, Interval: interval,
		OnLost:  func(l Lease, err error) { send("lost", l, err) },
		OnRenew: func(l Lease) { send("renewed", l, nil) },
	}
	if lapse {
		opts.OnLapse = func(l Lease, err error) { send("lapsed", l, err) }
	}
	k, err := n.StartKeeper(opts)
	if err != nil {
		t.Fatalf("StartKeeper: %v", err)
	}
	t.Cleanup(k.Stop)
	return k, ev
}

// holdLeases acquires count leases for n and hands them to k.
func holdLeases(t *testing.T, n *Node, k *Keeper, count int, ttl time.Duration) []Lease {
	t.Helper()
	var out []Lease
	for i := range count {
		l := mustAcquire(t, n, fmt.Sprintf("lane:%d", i), ttl)
		k.Hold(l)
		out = append(out, l)
	}
	return out
}

// waitEvents waits for one event of kind for each of leases and returns
// them by lease name; events of other kinds are skipped.
func waitEvents(t *testing.T, ev <-chan keeperEvent, kind string, leases []Lease) map[string]keeperEvent {
	t.Helper()
	want := map[string]bool{}
	for _, l := range leases {
		want[l.Name] = true
	}
	got := map[string]keeperEvent{}
	for len(got) < len(want) {
		e := receive(t, ev, fmt.Sprintf("%s of %d leases (%d so far)", kind, len(want), len(got)))
		if e.kind == kind && want[e.lease.Name] {
			if _, seen := got[e.lease.Name]; !seen {
				got[e.lease.Name] = e
			}
		}
	}
	return got
}

// hangLeases makes every statement on cluster_leases wait, as a database
// that stops answering does, until the returned transaction ends.
func hangLeases(t *testing.T, dsn string) *sql.Tx {
	t.Helper()
	tx, err := openDB(t, dsn).BeginTx(testContext(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback() })
	if _, err := tx.ExecContext(testContext(t), `LOCK TABLE cluster_leases IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	return tx
}

// However many leases a node holds, one renewal costs one round trip: the
// keeper renews them all in one statement, not one statement each.
func TestKeeperRenewsEveryLeaseInOneRoundTrip(t *testing.T) {
	dsn := newDatabase(t)
	db, trips := countedDB(t, dsn)
	a, err := NewNode(db, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	const count, ttl = 20, 30 * time.Second
	k, ev := watchKeeper(t, a, trips, ttl, 200*time.Millisecond, false)
	leases := holdLeases(t, a, k, count, ttl)
	before := trips.Load()
	renewed := waitEvents(t, ev, "renewed", leases)
	var used int64
	for _, e := range renewed {
		used = max(used, e.trips-before)
	}
	// Two, not one, in case the first tick came in the middle of the Holds.
	if used > 2 {
		t.Errorf("renewing %d leases took %d round trips, want 1", count, used)
	}
}

// A database that stops answering leaves every lease unrenewed at once:
// once their TTL has passed they are all reported lost in one pass, with
// no renewal attempt in between (not one per attempt's timeout, the last
// long after the TTL).
func TestKeeperReportsAllLeasesLostTogetherWhenTheDatabaseHangs(t *testing.T) {
	dsn := newDatabase(t)
	db, trips := countedDB(t, dsn)
	a, err := NewNode(db, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	const count, ttl = 6, 900 * time.Millisecond
	k, ev := watchKeeper(t, a, trips, ttl, 0, false)
	leases := holdLeases(t, a, k, count, ttl)
	waitEvents(t, ev, "renewed", leases) // renewed together, so due together
	hung := time.Now()
	hangLeases(t, dsn)
	lost := waitEvents(t, ev, "lost", leases)
	took := time.Since(hung)
	at := map[int64]int{}
	for name, e := range lost {
		if e.err == nil || errors.Is(e.err, ErrLeaseLost) {
			t.Errorf("lease %s: %v, want lost by timeout, not taken", name, e.err)
		}
		at[e.trips]++
	}
	if len(at) != 1 {
		t.Errorf("the %d leases were reported lost after %d different renewal attempts (%v), want all at once", count, len(at), at)
	}
	if held := k.Held(); len(held) != 0 {
		t.Errorf("keeper still renews %v after reporting them lost", held)
	}
	t.Logf("%d leases reported lost %v after the database stopped answering (ttl %v)", count, took.Round(time.Millisecond), ttl)
}

// With OnLapse, a lease not renewed for a TTL is kept and renewed on. When
// the database answers again, the one no one took is renewed with its
// token (its holder's writes carried on), the one taken meanwhile is
// reported lost; and the answer comes from the renewal sent before, still
// under way on the keeper's connection (no new connection to wait for,
// which after a frozen server's thaw lets another node overtake it).
func TestKeeperRenewsALapsedLeaseUnlessTaken(t *testing.T) {
	ctx := testContext(t)
	dsn := newDatabase(t)
	mustExec(t, openDB(t, dsn), createJournal)
	db, trips, conns := countedDBConns(t, dsn)
	a, err := NewNode(db, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	const ttl = 900 * time.Millisecond
	k, ev := watchKeeper(t, a, trips, ttl, 0, true)
	leases := holdLeases(t, a, k, 2, ttl)
	kept, taken := leases[0], leases[1]
	waitEvents(t, ev, "renewed", leases)
	hung := hangLeases(t, dsn)
	opened := conns.Load()
	for name, e := range waitEvents(t, ev, "lapsed", leases) {
		if e.err == nil || errors.Is(e.err, ErrLeaseLost) {
			t.Errorf("lease %s lapsed with %v, want a timeout", name, e.err)
		}
	}
	if got := len(k.Held()); got != 2 {
		t.Errorf("keeper renews %d leases after they lapsed, want both still", got)
	}
	// Another node takes one of them as the database comes back.
	if _, err := hung.ExecContext(ctx, `UPDATE cluster_leases SET holder = 'node-b', token = token + 1 WHERE name = $1`, taken.Name); err != nil {
		t.Fatal(err)
	}
	if err := hung.Commit(); err != nil {
		t.Fatal(err)
	}
	waitEvents(t, ev, "renewed", []Lease{kept})
	if n := conns.Load() - opened; n != 0 {
		t.Errorf("the keeper opened %d connections to renew after the outage, want none (the renewal under way lands)", n)
	}
	if e := waitEvents(t, ev, "lost", []Lease{taken})[taken.Name]; !errors.Is(e.err, ErrLeaseLost) {
		t.Errorf("the lease taken meanwhile: %v, want ErrLeaseLost", e.err)
	}
	if held := k.Held(); len(held) != 1 || held[0] != kept {
		t.Errorf("keeper renews %v, want only %v", held, kept)
	}
	if err := writeJournal(ctx, openDB(t, dsn), kept, "after the outage"); err != nil {
		t.Errorf("a write under the renewed lease's token: %v, want it through the fence", err)
	}
}

// A renewal records the heartbeat of a node that has joined: after an
// outage, the renewal that lands first shows the node live, before its
// own loop gets to heartbeat, so no other node places its lanes elsewhere.
// A node that has left is not brought back by one.
func TestRenewAllRecordsTheHeartbeat(t *testing.T) {
	ctx := testContext(t)
	dsn := newDatabase(t)
	clock := installTestClock(t, dsn)
	a, b := newNode(t, dsn, "node-a"), newNode(t, dsn, "node-b")
	const ttl = 10 * time.Second
	if _, err := a.Join(ctx, ttl, ""); err != nil {
		t.Fatal(err)
	}
	l := mustAcquire(t, a, "lane:x", ttl)
	clock.Advance(2 * ttl) // the database frozen past the TTL
	if err := b.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	assertLive(t, b, ttl, "node-b")
	if res, err := a.RenewAll(ctx, []Lease{l}, ttl); err != nil || len(res.Renewed) != 1 {
		t.Fatalf("RenewAll = %+v, %v; want the lease renewed", res, err)
	}
	assertLive(t, b, ttl, "node-a", "node-b")
	if err := a.Leave(ctx, nil, ttl); err != nil {
		t.Fatal(err)
	}
	if _, err := a.RenewAll(ctx, []Lease{l}, ttl); err != nil {
		t.Fatal(err)
	}
	assertLive(t, b, ttl, "node-b")
}
