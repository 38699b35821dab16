package node

import (
	"context"
	"database/sql"
	"slices"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/store"
)

// fakeLanes is the store and the gateway of a coordinator under test; it
// records what the coordinator asked of the gateway.
type fakeLanes struct {
	mu        sync.Mutex
	stepDowns []string
	recovered []string
}

func (f *fakeLanes) LanesWithWork(context.Context) ([]string, error)  { return nil, nil }
func (f *fakeLanes) Lane(context.Context, string) (store.Lane, error) { return store.Lane{}, nil }
func (f *fakeLanes) ClaimInbound(context.Context, string) ([]store.InboundRow, error) {
	return nil, nil
}
func (f *fakeLanes) Cursor(context.Context, string) (string, bool, error) { return "", false, nil }
func (f *fakeLanes) SetCursorFenced(context.Context, string, string, string, int64) error {
	return nil
}
func (f *fakeLanes) MarkBindingLost(context.Context, string, int64, string, string) error { return nil }
func (f *fakeLanes) ThreadTurns(context.Context, string, string, int) ([]store.ThreadTurn, error) {
	return nil, nil
}
func (f *fakeLanes) DispatchClaimed(context.Context, []store.InboundRow) {}
func (f *fakeLanes) RestoreThread(ctx context.Context, _, _ string, restore func(context.Context) error) error {
	return restore(ctx)
}
func (f *fakeLanes) LaneIdle(string) bool { return false }

func (f *fakeLanes) RecoverLane(_ context.Context, key string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recovered = append(f.recovered, key)
	return nil
}

func (f *fakeLanes) StepDown(_ context.Context, key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stepDowns = append(f.stepDowns, key)
}

func (f *fakeLanes) calls() (stepDowns, recovered []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.stepDowns), slices.Clone(f.recovered)
}

// waitFor polls cond, what the test can observe of the keeper's goroutine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.Until(t, 20*time.Second, what, cond)
}

// The database stops answering for longer than the TTL while a node
// serves a lane with work under way. The lane stops being served, but it
// is neither dropped (its turn and queue stay) nor taken again with a new
// token when the database is back: the same lease is renewed, so the
// writes it had queued under its token go through, and nothing is cut off.
func TestLapsedLaneKeepsItsWorkAndToken(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	core, logs := observer.New(zapcore.InfoLevel)
	const ttl = 900 * time.Millisecond
	c, err := startNode(ctx, dsn, "node-a", t.TempDir(), t.TempDir(), ttl, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	lanes := &fakeLanes{}
	c.Attach(lanes, lanes)
	const key = "v1:api:lane-x"
	l, ok, err := c.node.Acquire(ctx, cluster.LanePrefix+key, ttl)
	if err != nil || !ok {
		t.Fatalf("Acquire: ok=%v err=%v", ok, err)
	}
	c.take(ctx, key, l)
	// The token a write the lane has queued carries (the store asks at
	// submit time).
	lease, token, _ := c.fence(key)

	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	hung, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hung.ExecContext(ctx, `LOCK TABLE cluster_leases IN ACCESS EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the lease reported lost", func() bool { return logs.FilterMessage("cluster.lease_lost").Len() > 0 })
	if c.Serves(key) {
		t.Error("the lane is served with its lease not renewed for a TTL")
	}
	if err := hung.Rollback(); err != nil {
		t.Fatal(err)
	}
	c.serve(ctx, key, []string{"node-a"}) // the node's next round looks at the lane
	waitFor(t, "the lane served again", func() bool { return c.Serves(key) })

	stepDowns, recovered := lanes.calls()
	if len(stepDowns) != 0 {
		t.Errorf("the lane was stepped down %d times (its turn and queue dropped), want kept", len(stepDowns))
	}
	if len(recovered) != 1 {
		t.Errorf("the lane was recovered %d times, want once (taken once, not again with a new token)", len(recovered))
	}
	if _, now, _ := c.fence(key); now != token {
		t.Errorf("the lane's writes carry token %d after the outage, want %d still", now, token)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only check
	if err := cluster.Fence(ctx, tx, cluster.Lease{Name: lease, Token: token}); err != nil {
		t.Errorf("a write queued before the outage, under token %d: %v, want it through the fence", token, err)
	}
}
