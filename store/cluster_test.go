package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cluster"
)

// clusterStore opens a shared (cluster-mode) store on dsn whose lane writes
// carry the leases in leases.
func clusterStore(t *testing.T, dsn string, leases *leaseBook) *Store {
	t.Helper()
	return openPG(t, dsn, Options{Cluster: ClusterOptions{
		Shared:   true,
		Fence:    leases.fence,
		OnFenced: leases.fenced,
	}})
}

// leaseBook is the node side of the fence hook: the lease each lane's
// writes carry, and the lanes the database refused.
type leaseBook struct {
	mu      sync.Mutex
	held    map[string]cluster.Lease
	refused []string
}

func (b *leaseBook) set(key string, l cluster.Lease) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.held == nil {
		b.held = map[string]cluster.Lease{}
	}
	b.held[key] = l
}

func (b *leaseBook) fence(key string) (string, int64, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, ok := b.held[key]
	return l.Name, l.Token, ok
}

func (b *leaseBook) fenced(key string, _ error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refused = append(b.refused, key)
}

// advanceDatabaseClock makes cluster_now(), the clock leases expire by,
// run d ahead of the real one, so a lease runs out without waiting for it.
func advanceDatabaseClock(t *testing.T, dsn string, d time.Duration) {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(fmt.Sprintf(`CREATE OR REPLACE FUNCTION cluster_now() RETURNS timestamptz LANGUAGE sql VOLATILE
		AS $$ SELECT clock_timestamp() + interval '%d microseconds' $$`, d.Microseconds())); err != nil {
		t.Fatalf("advance the database clock: %v", err)
	}
}

func clusterDatabase(t *testing.T) (string, *cluster.Node, *cluster.Node) {
	t.Helper()
	dsn := pgDatabase(t)
	_ = openPG(t, dsn, Options{}).Close() // migrates the store's tables
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := cluster.Migrate(context.Background(), db); err != nil {
		t.Fatalf("cluster.Migrate: %v", err)
	}
	a, err := cluster.NewNode(db, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	b, err := cluster.NewNode(db, "node-b")
	if err != nil {
		t.Fatal(err)
	}
	return dsn, a, b
}

// Two shared stores open one database at once (no ownership lock); the
// lane's owner writes under its lease, and once another node has taken the
// lease the ex-owner's binding, journal and outbox writes are refused with
// ErrFenced, reported to OnFenced, and leave nothing behind.
func TestClusterFencedWritesAfterTakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, nodeA, nodeB := clusterDatabase(t)
	var booksA, booksB leaseBook
	a, b := clusterStore(t, dsn, &booksA), clusterStore(t, dsn, &booksB)

	lane, err := a.EnsureLane(ctx, testLaneKey("t1"))
	if err != nil {
		t.Fatal(err)
	}
	key := lane.SessionKey
	leaseA, ok, err := nodeA.Acquire(ctx, "lane:"+key, 50*time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("Acquire by A = %v, %v", ok, err)
	}
	booksA.set(key, leaseA)
	if err := a.BindThread(ctx, key, lane.Generation, "thread-a"); err != nil {
		t.Fatalf("owner's BindThread: %v", err)
	}

	// A stops renewing (paused) and its lease runs out: the database's
	// clock, which alone decides expiry, moves past the TTL.
	advanceDatabaseClock(t, dsn, time.Minute)
	leaseB, ok, err := nodeB.Acquire(ctx, "lane:"+key, time.Minute)
	if err != nil || !ok {
		t.Fatalf("Acquire by B after expiry = %v, %v", ok, err)
	}
	booksB.set(key, leaseB)

	writes := map[string]func() error{
		"BindThread": func() error { return a.BindThread(ctx, key, lane.Generation, "thread-stale") },
		"JournalTurn": func() error {
			return a.JournalTurn(ctx, JournalEntry{SessionKey: key, Generation: lane.Generation, ThreadID: "thread-a", Text: "x"})
		},
		"Enqueue": func() error {
			_, err := a.Enqueue(ctx, OutboxMessage{SessionKey: key, Platform: "telegram", Kind: "topic", ChatID: "100", Text: "stale reply"})
			return err
		},
	}
	for name, write := range writes {
		if err := write(); !errors.Is(err, ErrFenced) {
			t.Errorf("ex-owner's %s = %v, want ErrFenced", name, err)
		}
	}
	if len(booksA.refused) != len(writes) {
		t.Errorf("OnFenced told %d times (%v), want %d", len(booksA.refused), booksA.refused, len(writes))
	}
	got, err := b.Lane(ctx, key)
	if err != nil || got.ThreadID != "thread-a" {
		t.Errorf("lane after refused rebind = %+v, %v; want thread-a kept", got, err)
	}
	if rows, err := b.DueOutbox(ctx, time.Now().Add(time.Hour), 10); err != nil || len(rows) != 0 {
		t.Errorf("outbox after refused enqueue = %d rows, %v; want none", len(rows), err)
	}
	// The new owner writes.
	if err := b.BindThread(ctx, key, lane.Generation, "thread-b"); err != nil {
		t.Errorf("new owner's BindThread: %v", err)
	}
}

// The owner claims its lane's received rows oldest first, each once: a
// second claim finds nothing, and a row recorded later is the next claim.
func TestClusterClaimInboundInOrderOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, nodeA, _ := clusterDatabase(t)
	var books leaseBook
	ingest, owner := clusterStore(t, dsn, &leaseBook{}), clusterStore(t, dsn, &books)
	lane, err := ingest.EnsureLane(ctx, testLaneKey("t2"))
	if err != nil {
		t.Fatal(err)
	}
	key := lane.SessionKey
	l, ok, err := nodeA.Acquire(ctx, "lane:"+key, time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	books.set(key, l)
	record := func(id string) int64 {
		t.Helper()
		n, _, err := ingest.RecordInbound(ctx, Inbound{Platform: "telegram", MessageID: id, SessionKey: key, Text: "m" + id})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	first := record("1")
	// What the lane's owner needs to take a typed answer comes with the
	// row: the message it replied to, and the sender's admin flag.
	second, _, err := ingest.RecordInbound(ctx, Inbound{Platform: "telegram", MessageID: "2", SessionKey: key, Text: "m2",
		ReplyTo: "q-msg-7", SenderAdmin: true})
	if err != nil {
		t.Fatal(err)
	}
	pending, err := owner.PendingInbound(ctx)
	if err != nil || len(pending) != 2 || pending[1].ReplyTo != "q-msg-7" || !pending[1].SenderAdmin || pending[0].SenderAdmin {
		t.Fatalf("pending = %+v, %v; want the second's reply-to and admin flag", pending, err)
	}
	rows, err := owner.ClaimInbound(ctx, key)
	if err != nil || len(rows) != 2 || rows[0].ID != first || rows[1].ID != second || rows[0].State != InboundProcessing {
		t.Fatalf("first claim = %+v, %v; want rows %d, %d processing", rows, err, first, second)
	}
	if rows[1].ReplyTo != "q-msg-7" || !rows[1].SenderAdmin || rows[0].ReplyTo != "" {
		t.Errorf("claimed rows %+v, want the second's reply-to and admin flag", rows)
	}
	if again, err := owner.ClaimInbound(ctx, key); err != nil || len(again) != 0 {
		t.Fatalf("second claim = %+v, %v; want nothing", again, err)
	}
	third := record("3")
	if rows, err := owner.ClaimInbound(ctx, key); err != nil || len(rows) != 1 || rows[0].ID != third {
		t.Fatalf("claim after a new row = %+v, %v; want row %d", rows, err, third)
	}
	keys, err := owner.LanesWithWork(ctx)
	if err != nil || len(keys) != 1 || keys[0] != key {
		t.Errorf("LanesWithWork = %v, %v; want [%s] (processing rows)", keys, err, key)
	}
}

// The Telegram poller's offset is fenced by the poller's lease: once
// another node has taken the lease, the ex-poller's write is refused with
// ErrFenced and the new poller's offset stays.
func TestClusterFencedCursorAfterTakeover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, nodeA, nodeB := clusterDatabase(t)
	var books leaseBook
	a, b := clusterStore(t, dsn, &books), clusterStore(t, dsn, &books)
	const cursor, lease = "telegram.offset", "telegram:poller"

	leaseA, ok, err := nodeA.Acquire(ctx, lease, 50*time.Millisecond)
	if err != nil || !ok {
		t.Fatalf("Acquire by A = %v, %v", ok, err)
	}
	if err := a.SetCursorFenced(ctx, cursor, "10", lease, leaseA.Token); err != nil {
		t.Fatalf("the poller's write: %v", err)
	}
	advanceDatabaseClock(t, dsn, time.Minute) // A paused past its lease
	leaseB, ok, err := nodeB.Acquire(ctx, lease, time.Minute)
	if err != nil || !ok {
		t.Fatalf("Acquire by B = %v, %v", ok, err)
	}
	if err := b.SetCursorFenced(ctx, cursor, "20", lease, leaseB.Token); err != nil {
		t.Fatalf("the new poller's write: %v", err)
	}
	if err := a.SetCursorFenced(ctx, cursor, "11", lease, leaseA.Token); !errors.Is(err, ErrFenced) {
		t.Fatalf("the ex-poller's write: err = %v, want ErrFenced", err)
	}
	if v, _, err := b.Cursor(ctx, cursor); err != nil || v != "20" {
		t.Fatalf("cursor = %q, %v; want the new poller's 20", v, err)
	}
}

// On SQLite (one node, nothing to fence against) a fenced cursor write is
// a clear error, not a silent unfenced one.
func TestFencedCursorNeedsPostgres(t *testing.T) {
	t.Parallel()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	err = s.SetCursorFenced(context.Background(), "telegram.offset", "1", "telegram:poller", 1)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "postgres") {
		t.Fatalf("SetCursorFenced on SQLite: err = %v, want ErrInvalid naming postgres", err)
	}
}

// A claimed row its owner could not start goes back to received and is
// the next claim's, in order with its lane's other rows; a row no longer
// processing is left alone, and an owner that lost the lane cannot reopen
// the new owner's rows (fenced).
func TestClusterRequeueInbound(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dsn, nodeA, nodeB := clusterDatabase(t)
	var booksA, booksB leaseBook
	a, b := clusterStore(t, dsn, &booksA), clusterStore(t, dsn, &booksB)
	lane, err := a.EnsureLane(ctx, testLaneKey("t-requeue"))
	if err != nil {
		t.Fatal(err)
	}
	key := lane.SessionKey
	leaseA, ok, err := nodeA.Acquire(ctx, "lane:"+key, 50*time.Millisecond)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	booksA.set(key, leaseA)
	var ids []int64
	for _, m := range []string{"1", "2"} {
		id, _, err := a.RecordInbound(ctx, Inbound{Platform: "telegram", MessageID: m, SessionKey: key, Text: "m" + m})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if rows, err := a.ClaimInbound(ctx, key); err != nil || len(rows) != 2 {
		t.Fatalf("claim = %+v, %v", rows, err)
	}
	if err := a.SetInboundState(ctx, ids[0], InboundDone); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		if err := a.RequeueInbound(ctx, key, id); err != nil {
			t.Fatalf("RequeueInbound(%d): %v", id, err)
		}
	}
	rows, err := a.ClaimInbound(ctx, key)
	if err != nil || len(rows) != 1 || rows[0].ID != ids[1] {
		t.Fatalf("claim after the requeue = %+v, %v; want row %d again (row %d was done)", rows, err, ids[1], ids[0])
	}

	advanceDatabaseClock(t, dsn, time.Minute)
	leaseB, ok, err := nodeB.Acquire(ctx, "lane:"+key, time.Minute)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	booksB.set(key, leaseB)
	if err := a.RequeueInbound(ctx, key, ids[1]); !errors.Is(err, ErrFenced) {
		t.Fatalf("ex-owner's RequeueInbound = %v, want ErrFenced", err)
	}
	if n := countRows(t, b, "SELECT count(*) FROM inbox WHERE state = 'processing'"); n != 1 {
		t.Fatalf("%d rows processing, want the new owner's row left so", n)
	}
}
