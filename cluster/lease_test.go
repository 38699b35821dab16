package cluster

import (
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/internal/poll"
)

func TestMigrateConcurrentlyAndTwiceIsIdempotent(t *testing.T) {
	ctx := testContext(t)
	dsn := pgtest.Shared(t).NewDatabase(t)
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		db := openDB(t, dsn)
		wg.Go(func() { errs[i] = Migrate(ctx, db) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Migrate %d: %v", i, err)
		}
	}
	db := openDB(t, dsn)
	if err := Migrate(ctx, db); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	var version, rows int
	if err := db.QueryRowContext(ctx, `SELECT max(version), count(*) FROM cluster_schema`).Scan(&version, &rows); err != nil {
		t.Fatal(err)
	}
	if version != SchemaVersion || rows != 1 {
		t.Errorf("cluster_schema = version %d in %d rows, want %d in 1", version, rows, SchemaVersion)
	}
}

func TestMigrateRefusesNewerSchema(t *testing.T) {
	dsn := newDatabase(t)
	db := openDB(t, dsn)
	mustExec(t, db, `UPDATE cluster_schema SET version = version + 1`)
	err := Migrate(testContext(t), db)
	if err == nil || !containsAll(err.Error(), "newer", fmt.Sprint(SchemaVersion+1)) {
		t.Fatalf("Migrate on a newer schema: err = %v, want one naming the newer version", err)
	}
}

func TestHeartbeatListsOnlyRecentNodes(t *testing.T) {
	ctx := testContext(t)
	dsn := newDatabase(t)
	clock := installTestClock(t, dsn)
	a, b := newNode(t, dsn, "node-a"), newNode(t, dsn, "node-b")
	for _, n := range []*Node{b, a} {
		if err := n.Heartbeat(ctx); err != nil {
			t.Fatalf("Heartbeat: %v", err)
		}
	}
	assertLive(t, a, 10*time.Second, "node-a", "node-b")
	clock.Advance(20 * time.Second)
	if err := a.Heartbeat(ctx); err != nil {
		t.Fatal(err)
	}
	assertLive(t, b, 10*time.Second, "node-a")
	if _, err := a.LiveNodes(ctx, 0); err == nil {
		t.Error("LiveNodes with ttl 0: want an error")
	}
}

func assertLive(t *testing.T, n *Node, ttl time.Duration, want ...string) {
	t.Helper()
	got, err := n.LiveNodes(testContext(t), ttl)
	if err != nil {
		t.Fatalf("LiveNodes: %v", err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("LiveNodes = %v, want %v", got, want)
	}
}

func TestRacingNodesExactlyOneWinsEachLease(t *testing.T) {
	t.Parallel() // its own database and database clock
	dsn := newDatabase(t)
	clock := installTestClock(t, dsn)
	nodes := []*Node{newNode(t, dsn, "node-a"), newNode(t, dsn, "node-b"), newNode(t, dsn, "node-c")}
	const rounds = 60
	// First the race for new leases (an insert), then, once they have all
	// expired, for the takeover of each (an update of the row).
	for phase, wantToken := range []int64{1, 2} {
		if phase > 0 {
			clock.Advance(2 * time.Minute)
		}
		for r, won := range raceForLeases(t, nodes, rounds) {
			if len(won) != 1 {
				t.Errorf("phase %d round %d: %d nodes won the lease, want exactly 1", phase, r, len(won))
				continue
			}
			if won[0].Token != wantToken {
				t.Errorf("phase %d round %d: token %d, want %d", phase, r, won[0].Token, wantToken)
			}
		}
	}
}

// raceForLeases has every node try, at once, for each of rounds leases, and
// returns the winners of each.
func raceForLeases(t *testing.T, nodes []*Node, rounds int) [][]Lease {
	t.Helper()
	ctx := testContext(t)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		won  = make([][]Lease, rounds)
		errs []error
	)
	start := make(chan struct{})
	for r := range rounds {
		for _, n := range nodes {
			wg.Go(func() {
				<-start
				l, ok, err := n.Acquire(ctx, fmt.Sprintf("lane-%d", r), time.Minute)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				}
				if ok {
					won[r] = append(won[r], l)
				}
			})
		}
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("Acquire errors: %v", errs)
	}
	return won
}

func TestTokenGrowsOnEveryTakeover(t *testing.T) {
	ctx := testContext(t)
	dsn := newDatabase(t)
	clock := installTestClock(t, dsn)
	a, b := newNode(t, dsn, "node-a"), newNode(t, dsn, "node-b")
	const ttl = 15 * time.Second

	first := mustAcquire(t, a, "lane", ttl)
	if _, ok, _ := a.Acquire(ctx, "lane", ttl); ok {
		t.Fatal("Acquire of a lease the node already holds succeeded; want it refused until expiry")
	}
	clock.Advance(ttl)
	again := mustAcquire(t, a, "lane", ttl)
	if again.Token <= first.Token {
		t.Errorf("same node retaking after expiry: token %d, want > %d", again.Token, first.Token)
	}
	if err := a.Renew(ctx, first, ttl); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Renew with the pre-expiry token: err = %v, want ErrLeaseLost", err)
	}
	if err := b.Renew(ctx, again, ttl); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("node-b renewing node-a's lease: err = %v, want ErrLeaseLost", err)
	}
	if err := b.Release(ctx, again); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("node-b releasing node-a's lease: err = %v, want ErrLeaseLost", err)
	}
	if err := a.Release(ctx, again); err != nil {
		t.Fatalf("Release: %v", err)
	}
	third := mustAcquire(t, b, "lane", ttl)
	if third.Token <= again.Token || third.Holder != "node-b" {
		t.Errorf("after release: lease %+v, want node-b with token > %d", third, again.Token)
	}
	if err := a.Release(ctx, again); !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Release of a lease taken since: err = %v, want ErrLeaseLost", err)
	}
}

func TestLeaseArgumentsAreChecked(t *testing.T) {
	ctx := testContext(t)
	a := newNode(t, newDatabase(t), "node-a")
	if _, _, err := a.Acquire(ctx, "", time.Second); err == nil {
		t.Error("Acquire with an empty name: want an error")
	}
	if _, _, err := a.Acquire(ctx, "lane", 0); err == nil {
		t.Error("Acquire with ttl 0: want an error")
	}
	if _, err := NewNode(nil, "x"); err == nil {
		t.Error("NewNode without a database: want an error")
	}
	if _, err := NewNode(openDB(t, "postgres://127.0.0.1:1/x"), ""); err == nil {
		t.Error("NewNode with an empty id: want an error")
	}
}

// A holder that stops renewing (paused, as by SIGSTOP) loses the lane after
// its TTL; when it wakes, the database refuses its writes and its Renew
// tells it to step down.
func TestStalledHolderIsTakenOverAndFencedByTheDatabase(t *testing.T) {
	ctx := testContext(t)
	dsn := newDatabase(t)
	clock := installTestClock(t, dsn)
	mustExec(t, openDB(t, dsn), createJournal)
	a, b := newNode(t, dsn, "node-a"), newNode(t, dsn, "node-b")
	const ttl = 15 * time.Second

	old := mustAcquire(t, a, "lane", ttl)
	if err := writeJournal(ctx, a.db, old, "a1"); err != nil {
		t.Fatalf("owner's fenced write: %v", err)
	}
	clock.Advance(ttl - time.Second)
	if _, ok, _ := b.Acquire(ctx, "lane", ttl); ok {
		t.Fatal("node-b took the lease before its TTL ran out")
	}
	clock.Advance(time.Second)
	taken := mustAcquire(t, b, "lane", ttl)
	if taken.Token <= old.Token {
		t.Fatalf("takeover token %d, want > %d", taken.Token, old.Token)
	}

	err := writeJournal(ctx, a.db, old, "a2-after-takeover")
	if !errors.Is(err, ErrFenced) {
		t.Fatalf("ex-owner's write after takeover: err = %v, want ErrFenced", err)
	}
	if err := a.Renew(ctx, old, ttl); !errors.Is(err, ErrLeaseLost) {
		t.Fatalf("ex-owner's Renew: err = %v, want ErrLeaseLost", err)
	}
	if err := writeJournal(ctx, b.db, taken, "b1"); err != nil {
		t.Fatalf("new owner's write: %v", err)
	}
	if got, want := journalEntries(t, a.db), []string{"a1", "b1"}; !slices.Equal(got, want) {
		t.Errorf("journal = %v, want %v", got, want)
	}
}

// A write under way holds the lease row, so a takeover waits for it to
// commit rather than slipping in between its fence check and its commit.
func TestTakeoverWaitsForAFencedWriteInFlight(t *testing.T) {
	ctx := testContext(t)
	dsn := newDatabase(t)
	clock := installTestClock(t, dsn)
	watcher := openDB(t, dsn)
	mustExec(t, watcher, createJournal)
	a, b := newNode(t, dsn, "node-a"), newNode(t, dsn, "node-b")
	old := mustAcquire(t, a, "lane", time.Minute)

	tx, err := a.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if err := Fence(ctx, tx, old); err != nil {
		t.Fatalf("Fence: %v", err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO lane_journal VALUES ('lane', 'a-in-flight')`); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	type acquired struct {
		l   Lease
		ok  bool
		err error
	}
	done := make(chan acquired, 1)
	go func() {
		l, ok, err := b.Acquire(ctx, "lane", time.Minute)
		done <- acquired{l, ok, err}
	}()
	waitForLockWait(t, watcher)
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit of the write in flight: %v", err)
	}
	got := <-done
	if got.err != nil || !got.ok || got.l.Token <= old.Token {
		t.Fatalf("takeover after the write: %+v, want ok with token > %d", got, old.Token)
	}
	if err := Fence(ctx, a.db, old); !errors.Is(err, ErrFenced) {
		t.Errorf("Fence with the old token after takeover: %v, want ErrFenced", err)
	}
}

// waitForLockWait waits until some backend is blocked on a row lock: the
// takeover has reached the lease row held by the write in flight.
func waitForLockWait(t *testing.T, db *sql.DB) {
	t.Helper()
	var err error
	// Polling the database's own state, not guessing a delay.
	waited := poll.Wait(20*time.Second, nil, func() bool {
		var waiting int
		err = db.QueryRowContext(testContext(t), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&waiting)
		return err != nil || waiting > 0
	})
	switch {
	case err != nil:
		t.Fatal(err)
	case !waited:
		t.Fatal("no backend ever waited on the lease row lock")
	}
}

func TestLeaseSurvivesReconnectAndServerRestart(t *testing.T) {
	t.Parallel() // its own server, which it restarts
	ctx := testContext(t)
	srv := pgtest.Start(t, pgtest.Options{Durable: true})
	dsn := srv.NewDatabase(t)
	if err := Migrate(ctx, openDB(t, dsn)); err != nil {
		t.Fatal(err)
	}
	a := newNode(t, dsn, "node-a")
	l := mustAcquire(t, a, "lane", time.Minute)
	a.db.Close()

	srv.Kill()
	if err := srv.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	a2, b := newNode(t, dsn, "node-a"), newNode(t, dsn, "node-b")
	if err := a2.Renew(ctx, l, time.Minute); err != nil {
		t.Fatalf("Renew on a new connection after restart: %v", err)
	}
	if err := Fence(ctx, a2.db, l); err != nil {
		t.Errorf("Fence after restart: %v", err)
	}
	if _, ok, err := b.Acquire(ctx, "lane", time.Minute); ok || err != nil {
		t.Errorf("other node's Acquire after restart: ok=%v err=%v, want refused", ok, err)
	}
}

func mustAcquire(t testing.TB, n *Node, name string, ttl time.Duration) Lease {
	t.Helper()
	l, ok, err := n.Acquire(testContext(t), name, ttl)
	if err != nil || !ok {
		t.Fatalf("%s Acquire(%q): ok=%v err=%v, want it taken", n.ID(), name, ok, err)
	}
	return l
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}

// ReadStatus lists every node with its heartbeat age and liveness, and
// counts each node's unexpired lane leases apart from its other leases.
func TestReadStatusCountsLeasesPerNode(t *testing.T) {
	ctx := testContext(t)
	dsn := newDatabase(t)
	a, b := newNode(t, dsn, "node-a"), newNode(t, dsn, "node-b")
	for _, n := range []*Node{a, b} {
		if err := n.Heartbeat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	mustAcquire(t, a, LanePrefix+"k1", time.Minute)
	mustAcquire(t, a, LanePrefix+"k2", time.Minute)
	mustAcquire(t, b, LanePrefix+"k3", time.Minute)
	mustAcquire(t, b, "telegram:poller", time.Minute)
	st, err := ReadStatus(ctx, a.db, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Nodes) != 2 || len(st.Leases) != 4 {
		t.Fatalf("status = %+v; want 2 nodes and 4 leases", st)
	}
	na, nb := st.Nodes[0], st.Nodes[1]
	if na.ID != "node-a" || na.LanesHeld != 2 || !na.Live || len(na.OtherLeases) != 0 {
		t.Errorf("node-a = %+v; want live with 2 lanes", na)
	}
	if nb.ID != "node-b" || nb.LanesHeld != 1 || len(nb.OtherLeases) != 1 || nb.OtherLeases[0] != "telegram:poller" {
		t.Errorf("node-b = %+v; want 1 lane and the poller", nb)
	}
	if na.HeartbeatAge < 0 || na.HeartbeatAge > time.Minute {
		t.Errorf("node-a heartbeat age %v, want a small non-negative age", na.HeartbeatAge)
	}
}
