package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/platforms/telegram"
	"github.com/gatewayd/gatewayd/store"
)

// startTestClusterNode is a cluster node of this process on dsn with its
// own store, as a daemon's, without a gateway.
func startTestClusterNode(t *testing.T, ctx context.Context, dsn, id string, ttl time.Duration) *Coordinator {
	t.Helper()
	c, err := startNode(ctx, dsn, id, t.TempDir(), t.TempDir(), ttl, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	st, err := store.OpenPostgres(ctx, dsn, store.Options{Logger: zaptest.NewLogger(t), Cluster: c.StoreOptions()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c.st = st
	return c
}

// Two pollers and a stolen lease: node-a is elected and writes the
// Telegram offset; it pauses past its lease, node-b is elected and moves
// the offset on; node-a's late write is then refused (ErrNotPoller, so its
// poller stops) and the offset stays node-b's.
func TestPollerOffsetIsFencedByTheElection(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	const ttl = time.Minute // no renewal runs during the test
	a := startTestClusterNode(t, ctx, dsn, "node-a", ttl)
	b := startTestClusterNode(t, ctx, dsn, "node-b", ttl)
	clock := installDBClock(t, a.db)

	_, curA, err := a.PollGate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := curA.SetCursor(ctx, telegram.CursorName, "10"); err != nil {
		t.Fatalf("the elected poller's offset write: %v", err)
	}
	clock.Advance(t, 2*ttl) // node-a paused past its lease
	_, curB, err := b.PollGate(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := curB.SetCursor(ctx, telegram.CursorName, "20"); err != nil {
		t.Fatalf("the new poller's offset write: %v", err)
	}
	err = curA.SetCursor(ctx, telegram.CursorName, "11")
	if !errors.Is(err, telegram.ErrNotPoller) || !errors.Is(err, store.ErrFenced) {
		t.Fatalf("the ex-poller's offset write: err = %v, want ErrNotPoller from the fence", err)
	}
	if v, _, err := b.st.Cursor(ctx, telegram.CursorName); err != nil || v != "20" {
		t.Fatalf("offset = %q, %v; want node-b's 20", v, err)
	}
}
