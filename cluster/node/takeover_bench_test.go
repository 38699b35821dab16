package node

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

// BenchmarkLaneTakeover is what a node pays to take over a lane once the
// old owner's lease has expired, up to being ready to run the lane's next
// turn: acquire the expired lease (token up), restore the shipped rollout
// into this node's CODEX_HOME, claim the lane's inbox row and resume the
// thread on the real app-server (thread/resume, which reads the rollout).
// The thread was built by real turns on another app-server and shipped
// after each, as the owner does. The database clock is moved forward
// between iterations instead of waiting out TTLs.
//
// Metrics: acquire/restore/claim/resume-ns/op are each step's wall time;
// cpu-ns/op is this process's CPU (not codex's, not PostgreSQL's).
func BenchmarkLaneTakeover(b *testing.B) {
	for _, turns := range []int{1, 150} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) { benchTakeover(b, turns) })
	}
}

func benchTakeover(b *testing.B, turns int) {
	ctx, cancel := context.WithTimeout(b.Context(), 20*time.Minute)
	defer cancel()
	const ttl = time.Minute
	key := gateway.Address{Platform: "telegram", Kind: gateway.LaneDM, ChatID: "7001"}.SessionKey()
	f := newTakeoverFixture(b, ctx, ttl, key, turns)
	c := f.node

	var acquire, restore, claim, resume, cpu time.Duration
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		f.expireWithA(b, ctx, i)
		b.StartTimer()

		cpu0, t0 := processCPU(), time.Now()
		l, ok, err := c.node.Acquire(ctx, cluster.LanePrefix+key, ttl)
		if err != nil || !ok {
			b.Fatalf("Acquire: ok=%v err=%v", ok, err)
		}
		c.hold(key, l)
		t1 := time.Now()
		c.restore(ctx, key)
		t2 := time.Now()
		rows, err := c.st.ClaimInbound(ctx, key)
		if err != nil || len(rows) != 1 {
			b.Fatalf("ClaimInbound = %d rows, %v; want this iteration's one", len(rows), err)
		}
		t3 := time.Now()
		ens, err := f.cxB.EnsureThread(ctx, f.thread, codex.ThreadConfig{})
		if err != nil || ens.Outcome != codex.OutcomeResumed {
			b.Fatalf("EnsureThread = %+v, %v; want the restored thread resumed", ens, err)
		}
		t4 := time.Now()
		cpu += processCPU() - cpu0

		b.StopTimer()
		acquire, restore, claim, resume = acquire+t1.Sub(t0), restore+t2.Sub(t1), claim+t3.Sub(t2), resume+t4.Sub(t3)
		f.letGo(b, ctx, l, rows[0].ID)
		b.StartTimer()
	}
	n := float64(b.N)
	b.ReportMetric(float64(acquire.Nanoseconds())/n, "acquire-ns/op")
	b.ReportMetric(float64(restore.Nanoseconds())/n, "restore-ns/op")
	b.ReportMetric(float64(claim.Nanoseconds())/n, "claim-ns/op")
	b.ReportMetric(float64(resume.Nanoseconds())/n, "resume-ns/op")
	b.ReportMetric(float64(cpu.Nanoseconds())/n, "cpu-ns/op")
	b.ReportMetric(float64(f.rolloutBytes), "rollout-B")
}

// takeoverFixture is node-b (the taker, a real Coordinator on its store)
// and node-a (the owner whose lease expires), one thread of turns shipped.
type takeoverFixture struct {
	node         *Coordinator
	st           *store.Store // node-b's store, which node.st is
	a            *cluster.Node
	clock        *dbClock
	cxB          *codex.Client
	key, thread  string
	homeB        string
	ttl          time.Duration
	rolloutBytes int64
}

func newTakeoverFixture(b *testing.B, ctx context.Context, ttl time.Duration, key string, turns int) *takeoverFixture {
	dsn := pgtest.Shared(b).NewDatabase(b)
	model := codextest.NewModel(b)
	homeB := codextest.Home(b)
	c, err := startNode(ctx, dsn, "node-b", homeB, "", ttl, zap.NewNop())
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(c.Close)
	st, err := store.OpenPostgres(ctx, dsn, store.Options{Logger: zap.NewNop(), Cluster: c.StoreOptions()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	c.st, c.gw = st, &fakeGateway{} // the benchmark unloads node-b's thread itself
	a, err := cluster.NewNode(c.db, "node-a")
	if err != nil {
		b.Fatal(err)
	}
	f := &takeoverFixture{node: c, st: st, a: a, clock: installDBClock(b, c.db), key: key, homeB: homeB, ttl: ttl,
		cxB: startBenchCodex(b, ctx, model, homeB)}
	f.thread, f.rolloutBytes = shipTurns(b, ctx, c, a, model, key, turns)
	lane, err := st.EnsureLane(ctx, store.LaneKey{SessionKey: key, Platform: "telegram", Kind: "dm", ChatID: "7001"})
	if err != nil {
		b.Fatal(err)
	}
	if err := st.BindThread(ctx, key, lane.Generation, f.thread); err != nil {
		b.Fatal(err)
	}
	return f
}

// shipTurns runs turns real turns on node-a's own app-server and CODEX_HOME,
// shipping the rollout after each under node-a's lease.
func shipTurns(b *testing.B, ctx context.Context, c *Coordinator, a *cluster.Node, model *codextest.Model, key string, turns int) (string, int64) {
	homeA := codextest.Home(b)
	cx := startBenchCodex(b, ctx, model, homeA)
	th, err := cx.EnsureThread(ctx, "", codex.ThreadConfig{})
	if err != nil {
		b.Fatal(err)
	}
	l, ok, err := a.Acquire(ctx, cluster.LanePrefix+key, time.Hour)
	if err != nil || !ok {
		b.Fatalf("node-a Acquire: ok=%v err=%v", ok, err)
	}
	var size int64
	for i := range turns {
		res, err := cx.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: fmt.Sprintf("turn %d: remember %d", i, i*7)}, codex.TurnEvents{})
		if err != nil || res.Status != codex.TurnStatus("completed") {
			b.Fatalf("turn %d: %+v, %v", i, res, err)
		}
		shipped, err := c.rollouts.Ship(ctx, homeA, th.ThreadID, l)
		if err != nil {
			b.Fatalf("ship turn %d: %v", i, err)
		}
		size = shipped.From + shipped.Bytes
	}
	if err := a.Release(ctx, l); err != nil {
		b.Fatal(err)
	}
	return th.ThreadID, size
}

// expireWithA sets up one takeover: node-a holds the lane (a new token),
// a message waits in the inbox, node-a's lease runs out by the database
// clock, and node-b has neither the rollout nor the thread loaded.
func (f *takeoverFixture) expireWithA(b *testing.B, ctx context.Context, i int) {
	f.clock.Advance(b, 2*f.ttl)
	if _, ok, err := f.a.Acquire(ctx, cluster.LanePrefix+f.key, f.ttl); err != nil || !ok {
		b.Fatalf("node-a Acquire: ok=%v err=%v", ok, err)
	}
	if _, _, err := f.st.RecordInbound(ctx, store.Inbound{Platform: "telegram", MessageID: fmt.Sprintf("m%d", i),
		SessionKey: f.key, SenderID: "7001", Text: "next", ReceivedAt: time.Now()}); err != nil {
		b.Fatal(err)
	}
	f.clock.Advance(b, 2*f.ttl)
	if err := f.cxB.Release(ctx, f.thread); err != nil {
		b.Fatal(err)
	}
	if err := os.RemoveAll(filepath.Join(f.homeB, "sessions")); err != nil {
		b.Fatal(err)
	}
}

// letGo checks the rollout was restored, then gives the lane up so the next
// iteration starts from node-a again.
func (f *takeoverFixture) letGo(b *testing.B, ctx context.Context, l cluster.Lease, inbound int64) {
	if _, err := cluster.FindRollout(f.homeB, f.thread); err != nil {
		b.Fatalf("after the takeover: %v", err)
	}
	if err := f.st.SetInboundState(ctx, inbound, store.InboundDone); err != nil {
		b.Fatal(err)
	}
	c := f.node
	c.keeper.Drop(l.Name)
	c.mu.Lock()
	delete(c.owned, f.key)
	c.mu.Unlock()
}

func startBenchCodex(b testing.TB, ctx context.Context, m *codextest.Model, home string) *codex.Client {
	cx, err := codex.Start(ctx, codex.Options{Command: codextest.CodexBinary(b), Args: codextest.Args(m.URL),
		Home: home, Env: codextest.Env(), Dir: b.TempDir(), StartTimeout: 30 * time.Second, ClientName: "gatewayd-bench"})
	if err != nil {
		b.Fatalf("codex.Start: %v", err)
	}
	b.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := cx.Close(cctx); err != nil && !errors.Is(err, codex.ErrClosed) {
			b.Errorf("codex close: %v", err)
		}
	})
	return cx
}

// dbClock moves cluster_now(), the clock leases expire by, forward on one
// database, so a test or benchmark need not wait out a TTL.
type dbClock struct{ db *sql.DB }

func installDBClock(tb testing.TB, db *sql.DB) *dbClock {
	tb.Helper()
	if _, err := db.Exec(`CREATE TABLE cluster_test_clock (skew interval NOT NULL);
		INSERT INTO cluster_test_clock VALUES ('0');
		CREATE OR REPLACE FUNCTION cluster_now() RETURNS timestamptz LANGUAGE sql VOLATILE
			AS $$ SELECT clock_timestamp() + (SELECT skew FROM cluster_test_clock) $$;`); err != nil {
		tb.Fatal(err)
	}
	return &dbClock{db: db}
}

func (c *dbClock) Advance(tb testing.TB, d time.Duration) {
	tb.Helper()
	if _, err := c.db.Exec(`UPDATE cluster_test_clock SET skew = skew + $1 * interval '1 microsecond'`, d.Microseconds()); err != nil {
		tb.Fatal(err)
	}
}

// processCPU is this process's user+system CPU time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
