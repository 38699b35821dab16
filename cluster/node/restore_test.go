package node

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

// fakeGateway is the node's Gateway with no lanes running: RestoreThread
// runs the restore (as the gateway does once the thread is unloaded) unless
// unload says the thread cannot be unloaded.
type fakeGateway struct {
	mu        sync.Mutex
	restores  []string // threads RestoreThread was asked for
	recovered []string // lanes RecoverLane ran for
	stepped   []string // lanes stepped down
	unload    error
	failing   int // how many RecoverLane calls fail yet (the database away)
	claims    int // DispatchClaimed calls
}

func (g *fakeGateway) DispatchClaimed(context.Context, []store.InboundRow) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.claims++
}

func (g *fakeGateway) RestoreThread(ctx context.Context, key, threadID string, restore func(context.Context) error) error {
	g.mu.Lock()
	g.restores = append(g.restores, threadID)
	err := g.unload
	g.mu.Unlock()
	if err != nil {
		return err
	}
	return restore(ctx)
}

func (g *fakeGateway) RecoverLane(_ context.Context, key string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.recovered = append(g.recovered, key)
	if g.failing > 0 {
		g.failing--
		return fmt.Errorf("gateway: read journal: %w", errDatabaseAway)
	}
	return nil
}

var errDatabaseAway = errors.New("store: database unavailable")

func (g *fakeGateway) StepDown(_ context.Context, key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.stepped = append(g.stepped, key)
}

func (g *fakeGateway) LaneIdle(string) bool { return true }

// restoreFixture is node-b (a real Coordinator on its store, its CODEX_HOME
// and log observed) about to take a lane whose thread node-a served and
// shipped.
type restoreFixture struct {
	c      *Coordinator
	st     *store.Store
	gw     *fakeGateway
	logs   *observer.ObservedLogs
	a      *cluster.Node
	aLease cluster.Lease
	home   string // node-b's CODEX_HOME
	key    string
	lane   store.Lane
	dsn    string
}

const (
	restoreThread = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	restoreRel    = "sessions/2026/12/01/rollout-2026-12-01T10-00-00-" + restoreThread + ".jsonl"
)

func newRestoreFixture(t *testing.T, ctx context.Context) *restoreFixture {
	t.Helper()
	dsn := pgtest.Shared(t).NewDatabase(t)
	core, logs := observer.New(zapcore.DebugLevel)
	home := t.TempDir()
	c, err := startNode(ctx, dsn, "node-b", home, "", time.Minute, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	st, err := store.OpenPostgres(ctx, dsn, store.Options{Logger: zap.NewNop(), Cluster: c.StoreOptions()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	gw := &fakeGateway{}
	c.Attach(st, gw)
	key := gateway.Address{Platform: "telegram", Kind: gateway.LaneDM, ChatID: "7001"}.SessionKey()
	a, err := cluster.NewNode(c.db, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	aLease, ok, err := a.Acquire(ctx, cluster.LanePrefix+key, time.Minute)
	if err != nil || !ok {
		t.Fatalf("node-a Acquire: ok=%v err=%v", ok, err)
	}
	lane, err := st.EnsureLane(ctx, store.LaneKey{SessionKey: key, Platform: "telegram", Kind: "dm", ChatID: "7001"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.BindThread(ctx, key, lane.Generation, restoreThread); err != nil {
		t.Fatal(err)
	}
	return &restoreFixture{c: c, st: st, gw: gw, logs: logs, a: a, aLease: aLease, home: home, key: key, lane: lane, dsn: dsn}
}

// shipFromA ships lines as node-a's rollout of the thread, under its lease.
func (f *restoreFixture) shipFromA(t *testing.T, ctx context.Context, lines string) {
	t.Helper()
	homeA := t.TempDir()
	writeRollout(t, homeA, lines)
	if _, err := f.c.rollouts.Ship(ctx, homeA, restoreThread, f.aLease); err != nil {
		t.Fatal(err)
	}
}

// takeFromA hands the lane over to node-b as a node-a that stops would:
// its lease released, node-b acquires and takes.
func (f *restoreFixture) takeFromA(t *testing.T, ctx context.Context) cluster.Lease {
	t.Helper()
	if err := f.a.Release(ctx, f.aLease); err != nil {
		t.Fatal(err)
	}
	l, ok, err := f.c.node.Acquire(ctx, cluster.LanePrefix+f.key, time.Minute)
	if err != nil || !ok {
		t.Fatalf("node-b Acquire: ok=%v err=%v", ok, err)
	}
	f.c.take(ctx, f.key, l)
	return l
}

func (f *restoreFixture) events(name string) []observer.LoggedEntry {
	return f.logs.FilterMessage(name).All()
}

func writeRollout(t *testing.T, home, lines string) string {
	t.Helper()
	path := filepath.Join(home, filepath.FromSlash(restoreRel))
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A node that served the lane before (paused past its lease) and is handed
// it back finds its own history where the shipped one goes: one turn the
// cluster committed, then the turn it was cut off in. The take restores
// the shipped rollout (the turns node-a committed meanwhile) through the
// gateway (which unloads the thread first), keeps the local copy aside and
// names it in the log, and the lane's next ship is accepted. Before, the
// take logged cluster.restore_failed, resumed the stale copy, and every
// later ship was refused as a rewrite.
func TestTakeRestoresTheShippedRolloutOverADifferingLocalCopy(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	f := newRestoreFixture(t, ctx)
	const shipped = `{"turn":1}` + "\n" + `{"turn":2,"on":"node-a"}` + "\n"
	const stale = `{"turn":1}` + "\n" + `{"cut-off":true}` + "\n"
	f.shipFromA(t, ctx, shipped)
	local := writeRollout(t, f.home, stale)

	f.takeFromA(t, ctx)

	if len(f.gw.restores) != 1 || f.gw.restores[0] != restoreThread {
		t.Fatalf("RestoreThread asked for %v, want the lane's thread once", f.gw.restores)
	}
	if got, _ := os.ReadFile(local); string(got) != shipped {
		t.Errorf("rollout after the take = %q, want the shipped one %q", got, shipped)
	}
	moved := f.events("cluster.rollout_moved_aside")
	if len(moved) != 1 {
		t.Fatalf("cluster.rollout_moved_aside logged %d times, want once", len(moved))
	}
	aside, _ := moved[0].ContextMap()["moved_to"].(string)
	if filepath.Dir(aside) != filepath.Join(f.home, cluster.DivergedDir) || !strings.Contains(aside, restoreThread) {
		t.Errorf("moved to %q, want a file naming the thread in %s", aside, filepath.Join(f.home, cluster.DivergedDir))
	}
	if got, err := os.ReadFile(aside); err != nil || string(got) != stale {
		t.Errorf("the copy kept aside = %q, %v; want the local one %q", got, err, stale)
	}
	if n := len(f.events("cluster.restore_failed")); n != 0 {
		t.Errorf("cluster.restore_failed logged %d times", n)
	}
	if len(f.gw.recovered) != 1 {
		t.Errorf("RecoverLane ran %d times, want once: the lane is served", len(f.gw.recovered))
	}

	// The lane's next turn, on node-b, is shipped on top.
	appendLine(t, local, `{"turn":3,"on":"node-b"}`+"\n")
	f.c.ship(f.key, restoreThread, time.Now())
	if failed := f.events("cluster.ship_failed"); len(failed) != 0 {
		t.Fatalf("the ship after the restore failed: %v", failed[0].ContextMap()["error"])
	}
	if got := f.events("cluster.shipped"); len(got) != 1 || got[0].ContextMap()["bytes"] != int64(len(`{"turn":3,"on":"node-b"}`+"\n")) {
		t.Errorf("cluster.shipped = %v, want the new turn's bytes shipped once", got)
	}
}

// A lane whose shipped rollout cannot be restored (its chunks do not join
// up) is not served from the local copy: the thread is given up in the
// store (binding lost), which the gateway's next turn answers with a new
// thread and its one notice, and the lane is served. Before, the take
// logged the failure and went on with whatever copy the node had.
func TestTakeOfALaneWhoseRolloutCannotBeRestoredGivesTheThreadUp(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	f := newRestoreFixture(t, ctx)
	f.shipFromA(t, ctx, `{"turn":1}`+"\n")
	if _, err := f.c.db.ExecContext(ctx, `INSERT INTO rollout_chunks (thread_id, rel_path, "offset", data) VALUES ($1, $2, 100, 'x')`,
		restoreThread, restoreRel); err != nil {
		t.Fatal(err)
	}
	const stale = `{"turn":1}` + "\n" + `{"cut-off":true}` + "\n"
	writeRollout(t, f.home, stale)

	f.takeFromA(t, ctx)

	lane, err := f.st.Lane(ctx, f.key)
	if err != nil || lane.Binding != store.BindingLost || lane.ThreadID != restoreThread {
		t.Fatalf("lane after the take = %+v, %v; want thread %s marked lost", lane, err, restoreThread)
	}
	if n := len(f.events("cluster.thread_abandoned")); n != 1 {
		t.Errorf("cluster.thread_abandoned logged %d times, want once", n)
	}
	if !f.c.Serves(f.key) || len(f.gw.recovered) != 1 {
		t.Errorf("after the take: serves %v, recovered %d times; want the lane served", f.c.Serves(f.key), len(f.gw.recovered))
	}
}

// A thread the gateway cannot unload yet (the turn the node was stepped
// down from still ends on it) is not restored under it: the lane is let go,
// to be taken and restored in a later round, and nothing of it runs here.
func TestTakeLetsTheLaneGoWhileItsThreadCannotBeUnloaded(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	f := newRestoreFixture(t, ctx)
	f.shipFromA(t, ctx, `{"turn":1}`+"\n")
	f.gw.unload = gateway.ErrTurnWindingDown

	l := f.takeFromA(t, ctx)

	if f.c.Serves(f.key) || len(f.gw.recovered) != 0 || len(f.gw.stepped) != 1 {
		t.Errorf("after the take: serves %v, recovered %d, stepped down %d; want the lane let go before it ran",
			f.c.Serves(f.key), len(f.gw.recovered), len(f.gw.stepped))
	}
	again, ok, err := f.c.node.Acquire(ctx, cluster.LanePrefix+f.key, time.Minute)
	if err != nil || !ok || again.Token <= l.Token {
		t.Errorf("Acquire after the let-go = %+v, %v, %v; want the lease free again", again, ok, err)
	}
}

func appendLine(t *testing.T, path, s string) {
	t.Helper()
	file, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

// capturePlatform is the "test" platform: it records the messages the
// gateway sends; a turn's previews and status message, and their edits,
// it takes and forgets.
type capturePlatform struct{ out chan gateway.Outbound }

var _ gateway.Platform = (*capturePlatform)(nil)

func (p *capturePlatform) Name() string { return "test" }

// connected is closed: the capture is connected at once.
var connected = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (p *capturePlatform) Ready() <-chan struct{} { return connected }

func (p *capturePlatform) Edit(context.Context, gateway.Address, string, string) error { return nil }

func (p *capturePlatform) SendFile(ctx context.Context, out gateway.Outbound) (string, error) {
	return p.Send(ctx, out)
}

func (p *capturePlatform) OpenPlace(context.Context, gateway.Address, string) (gateway.Address, error) {
	return gateway.Address{}, fmt.Errorf("capture: %w", gateway.ErrNoPlace)
}

func (p *capturePlatform) Run(ctx context.Context, _ gateway.Sink) error {
	<-ctx.Done()
	return nil
}

func (p *capturePlatform) Send(_ context.Context, out gateway.Outbound) (string, error) {
	if out.Kind == gateway.OutPreview || out.Kind == gateway.OutProgress {
		return "shown", nil
	}
	p.out <- out
	return "sent", nil
}

// replyTo waits for the reply to message id and returns it with the
// notices sent before it.
func (p *capturePlatform) replyTo(t *testing.T, ctx context.Context, id string) (reply gateway.Outbound, notices []string) {
	t.Helper()
	for {
		select {
		case o := <-p.out:
			if o.Kind == gateway.OutNotice {
				notices = append(notices, o.Text)
			}
			if o.Kind == gateway.OutReply && o.InReplyTo == id {
				return o, notices
			}
		case <-ctx.Done():
			t.Fatalf("no reply to %s: %v", id, ctx.Err())
		}
	}
}

// The whole path on a real gateway and app-server: node-b takes a lane
// whose thread it served before (its rollout here, the thread still loaded
// in its app-server) but whose shipped rollout is broken. The lane is not
// served from the stale copy: its next turn runs on a new thread, without
// the stale context, and the lane is told once; the turn after is told
// nothing.
func TestUnrestorableLaneGetsAFreshThreadAndOneNotice(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real app-server")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	home := codextest.Home(t)
	c, err := startNode(ctx, dsn, "node-b", home, "", time.Minute, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	st, err := store.OpenPostgres(ctx, dsn, store.Options{Logger: zaptest.NewLogger(t), Cluster: c.StoreOptions()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	model := codextest.NewModel(t)
	cx := startBenchCodex(t, ctx, model, home)

	// node-b's stale history of the thread, loaded in its app-server.
	stale, err := cx.EnsureThread(ctx, "", codex.ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cx.RunTurn(ctx, stale.ThreadID, codex.TurnInput{Text: "STALE-CONTEXT"}, codex.TurnEvents{}); err != nil {
		t.Fatal(err)
	}
	addr := gateway.Address{Platform: "test", Kind: gateway.LaneAPI, ChatID: "l1"}
	key := addr.SessionKey()
	lane, err := st.EnsureLane(ctx, store.LaneKey{SessionKey: key, Platform: "test", Kind: string(gateway.LaneAPI), ChatID: "l1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.BindThread(ctx, key, lane.Generation, stale.ThreadID); err != nil {
		t.Fatal(err)
	}
	rel, err := cluster.FindRollout(home, stale.ThreadID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.db.ExecContext(ctx, `INSERT INTO rollout_chunks (thread_id, rel_path, "offset", data)
		VALUES ($1, $2, 0, 'x'), ($1, $2, 100, 'y')`, stale.ThreadID, rel); err != nil { // chunks that do not join up
		t.Fatal(err)
	}

	g, err := gateway.New(gateway.Config{MaxConcurrentTurns: 2, DrainTimeout: 5 * time.Second, Logger: zaptest.NewLogger(t),
		Thread: codex.ThreadConfig{Cwd: t.TempDir()}}.WithDefaults(), st, cx)
	if err != nil {
		t.Fatal(err)
	}
	p := &capturePlatform{out: make(chan gateway.Outbound, 64)}
	g.AddPlatform(p)
	c.Attach(st, g.Cluster())
	g.SetLaneGate(c)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- g.Run(runCtx) }()
	t.Cleanup(func() { stop(); <-done })
	select {
	case <-g.Ready():
	case err := <-done:
		t.Fatalf("gateway stopped: %v", err)
	}

	l, ok, err := c.node.Acquire(ctx, cluster.LanePrefix+key, time.Minute)
	if err != nil || !ok {
		t.Fatalf("Acquire: ok=%v err=%v", ok, err)
	}
	c.take(ctx, key, l)
	var notices []string
	for i, text := range []string{"FRESH-ONE", "FRESH-TWO"} {
		id := fmt.Sprintf("m%d", i+1)
		if _, err := g.Deliver(ctx, gateway.Inbound{Address: addr, MessageID: id, SenderID: "u1", Text: text}); err != nil {
			t.Fatal(err)
		}
		c.serve(ctx, key, []string{"node-b"}) // the claim a round makes
		reply, told := p.replyTo(t, ctx, id)
		notices = append(notices, told...)
		if reply.Text != "ECHO: "+text {
			t.Errorf("reply to %s = %q", id, reply.Text)
		}
	}
	if len(notices) != 1 || notices[0] != gateway.ReplacedNotice {
		t.Errorf("notices over two turns %q, want exactly one %q", notices, gateway.ReplacedNotice)
	}
	req, ok := model.LastRequestWith("FRESH-ONE")
	if !ok {
		t.Fatal("no model request for the first turn")
	}
	if req.ThreadID() == stale.ThreadID || strings.Contains(req.InputText(), "STALE-CONTEXT") {
		t.Errorf("the first turn after the take ran on thread %s (stale %s) with the stale context %v; want a fresh thread",
			req.ThreadID(), stale.ThreadID, strings.Contains(req.InputText(), "STALE-CONTEXT"))
	}
	if sl, err := st.Lane(ctx, key); err != nil || sl.ThreadID == stale.ThreadID || sl.Binding == store.BindingLost {
		t.Errorf("lane after the turns = %+v, %v; want bound to the new thread", sl, err)
	}
}

// A takeover whose recovery meets a database outage retries it in place,
// every round, for as long as the outage lasts and the lease is held: no
// row of the lane is claimed until it has succeeded (the unfinished rows
// run first), and a lane stepped down from is left to its next owner.
// Before, the failure was logged once and the lane's rows waited for its
// next takeover or start.
func TestTakeRetriesARecoveryThatFailedUntilItSucceeds(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	f := newRestoreFixture(t, ctx)
	f.gw.failing = 3 // the take's try and two rounds meet the outage
	f.takeFromA(t, ctx)
	live := []string{"node-b"}
	for round := 1; round <= 2; round++ {
		f.c.serve(ctx, f.key, live)
		if f.gw.claims != 0 {
			t.Fatalf("round %d: a row was claimed before the lane's recovery succeeded", round)
		}
	}
	f.c.retryRecoveries(ctx, nil) // a round in which the lane had no new work
	if n := len(f.gw.recovered); n != 4 {
		t.Fatalf("RecoverLane ran %d times, want 4 (the take, two rounds with work, one without)", n)
	}
	f.c.serve(ctx, f.key, live)
	if n := len(f.gw.recovered); n != 4 || f.gw.claims != 1 {
		t.Fatalf("after the recovery succeeded: RecoverLane ran %d times (want 4), %d claims (want 1)", n, f.gw.claims)
	}
	if got := len(f.events("cluster.recover_failed")); got != 3 {
		t.Errorf("%d cluster.recover_failed lines, want 3", got)
	}

	// A lane stepped down from while its recovery fails is not retried here.
	f.gw.failing = 1
	f.c.mu.Lock()
	f.c.unrecovered[f.key] = true
	f.c.mu.Unlock()
	f.c.stepDown(f.key, "test")
	f.c.retryRecoveries(ctx, nil)
	if n := len(f.gw.recovered); n != 4 {
		t.Fatalf("RecoverLane ran for a lane stepped down from (%d runs)", n)
	}
}
