package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/internal/pgtest"
)

// A second process as a node id another live process heartbeats with is
// refused with a config error naming cluster.node_id, after seeing its
// heartbeat move on; one whose predecessor died without a record in this
// state_dir (another machine, an older build) waits for the heartbeat to
// go stale and then joins, and the predecessor, were it only paused, finds
// itself superseded.
func TestJoinTellsALiveTwinFromADeadPredecessor(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	const ttl = time.Second

	live := startTestClusterNode(t, ctx, dsn, "node-live", ttl)
	beating, stop := context.WithCancel(ctx)
	defer stop()
	go func() { // the live process's rounds
		tick := time.NewTicker(ttl / 8)
		defer tick.Stop()
		for {
			select {
			case <-beating.Done():
				return
			case <-tick.C:
				_ = live.node.Heartbeat(beating)
			}
		}
	}()
	_, err := startNode(ctx, dsn, "node-live", t.TempDir(), t.TempDir(), ttl, zaptest.NewLogger(t))
	var ce *config.Error
	if !errors.As(err, &ce) || ce.Key != "cluster.node_id" {
		t.Fatalf("joining as a live node's id: err = %v, want a config error on cluster.node_id", err)
	}

	dead := startTestClusterNode(t, ctx, dsn, "node-dead", ttl) // no rounds: its heartbeat goes stale
	next, err := startNode(ctx, dsn, "node-dead", t.TempDir(), t.TempDir(), ttl, zaptest.NewLogger(t))
	if err != nil {
		t.Fatalf("joining after the predecessor died: %v", err)
	}
	t.Cleanup(next.Close)
	if err := dead.node.Heartbeat(ctx); !errors.Is(err, cluster.ErrSuperseded) {
		t.Fatalf("the predecessor's heartbeat: err = %v, want ErrSuperseded", err)
	}
}

// A process superseded by a newer one as its node id (it was paused past
// its heartbeat) serves nothing more: its round stops there and it does
// not run for the Telegram poller lease, free as it is.
func TestSupersededNodeGoesInert(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	dsn := pgtest.Shared(t).NewDatabase(t)
	old := startTestClusterNode(t, ctx, dsn, "node-a", time.Minute)
	newer, err := cluster.NewNode(old.db, "node-a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newer.Join(ctx, time.Minute, old.node.Incarnation()); err != nil {
		t.Fatal(err)
	}
	old.round(ctx)
	if !old.isSuperseded() {
		t.Fatal("the old process did not notice it was superseded")
	}
	short, stop := context.WithTimeout(ctx, 200*time.Millisecond)
	defer stop()
	if _, _, err := old.PollGate(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("superseded pollGate: err = %v, want it to wait, not be elected", err)
	}
	if _, ok, err := newer.Acquire(ctx, cluster.PollerLease, time.Minute); err != nil || !ok {
		t.Fatalf("poller lease after the superseded gate: ok=%v err=%v, want it still free", ok, err)
	}
}
