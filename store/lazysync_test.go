package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/internal/poll"
)

// synchronousNow is an operation that reads the write connection's
// synchronous mode for the batch it runs in (1 NORMAL, 2 FULL).
func synchronousNow(mode *int) writeFunc {
	return func(ctx context.Context, q querier) error {
		return q.QueryRowContext(ctx, "PRAGMA synchronous").Scan(mode)
	}
}

// A batch of only lazy operations commits under synchronous = NORMAL (no
// fsync); any durable operation in a batch makes the batch commit under
// FULL, which fsyncs the WAL and with it the lazy commits before.
func TestLazyCommitsSkipTheFsyncDurableOnesDoNot(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "synchronous is SQLite's; on PostgreSQL a lazy write is durable")
	s := openAt(t, testDBPath(t), Options{lazySyncDelay: time.Hour})
	ctx := context.Background()
	probe := func(lazy bool) (mode int, waiting bool) {
		t.Helper()
		fn := func(ctx context.Context, q querier) error {
			waiting = s.lazy.unsynced // the worker's own state: read on the worker
			return q.QueryRowContext(ctx, "PRAGMA synchronous").Scan(&mode)
		}
		write := s.write
		if lazy {
			write = s.writeLazy
		}
		if err := write(ctx, fn); err != nil {
			t.Fatal(err)
		}
		return mode, waiting
	}
	if mode, waiting := probe(false); mode != 2 || waiting {
		t.Errorf("durable write: synchronous %d, lazy commits waiting %v; want 2 (FULL), none", mode, waiting)
	}
	if mode, _ := probe(true); mode != 1 {
		t.Errorf("lazy write: synchronous %d, want 1 (NORMAL)", mode)
	}
	if _, waiting := probe(true); !waiting {
		t.Errorf("after a lazy commit, nothing waits for an fsync")
	}
	if mode, waiting := probe(false); mode != 2 || !waiting {
		t.Errorf("durable write after lazy ones: synchronous %d, lazy commits waiting %v; want 2, waiting", mode, waiting)
	}
	if _, waiting := probe(true); waiting {
		t.Errorf("the durable commit did not count as the lazy commits' fsync")
	}

	// A batch that holds both kinds: the worker is held on a first
	// operation while a lazy and a durable one queue behind it.
	hold, held := make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		first <- s.write(ctx, func(context.Context, querier) error { close(held); <-hold; return nil })
	}()
	<-held
	var lazyMode, durableMode int
	lazyDone, durableDone := make(chan error, 1), make(chan error, 1)
	go func() { lazyDone <- s.writeLazy(ctx, synchronousNow(&lazyMode)) }()
	waitQueued(t, s, 1)
	go func() { durableDone <- s.write(ctx, synchronousNow(&durableMode)) }()
	waitQueued(t, s, 2)
	close(hold)
	for _, ch := range []chan error{first, lazyDone, durableDone} {
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if lazyMode != 2 || durableMode != 2 {
		t.Errorf("mixed batch: synchronous %d (lazy op) and %d (durable op), want 2 for both", lazyMode, durableMode)
	}
}

// waitQueued waits until n submissions sit in the writer's queue.
func waitQueued(t *testing.T, s *Store, n int) {
	t.Helper()
	// A queue's length has no event to wait on: it is read again.
	poll.Until(t, 10*time.Second, fmt.Sprintf("%d submissions in the writer's queue", n), func() bool { return len(s.queue) >= n })
}

// Lazy commits with no durable commit after them are fsynced within the
// delay, and at Close.
func TestLazyCommitsAreSyncedWithinTheDelay(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "synchronous is SQLite's; on PostgreSQL a lazy write is durable")
	synced := make(chan struct{}, 16)
	s := openAt(t, testDBPath(t), Options{lazySyncDelay: 5 * time.Millisecond,
		lazySynced: func() { synced <- struct{}{} }})
	ctx := context.Background()
	if err := s.SetCursor(ctx, "c", "1"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-synced:
	case <-time.After(30 * time.Second):
		t.Fatal("the lazy commit was never fsynced")
	}
	var waiting bool
	if err := s.write(ctx, func(context.Context, querier) error { waiting = s.lazy.unsynced; return nil }); err != nil {
		t.Fatal(err)
	}
	if waiting {
		t.Error("after the flush a lazy commit still waits")
	}

	slow := openAt(t, testDBPath(t), Options{lazySyncDelay: time.Hour, lazySynced: func() { synced <- struct{}{} }})
	if err := slow.SetCursor(ctx, "c", "2"); err != nil {
		t.Fatal(err)
	}
	if err := slow.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-synced:
	default:
		t.Fatal("Close returned with a lazy commit not fsynced")
	}
}

// BenchmarkSentMark is the cost of recording a delivery as the deliverer
// does (MarkSent, a lazy commit) against the same write made durable (an
// fsync per commit), one submitter, so no group commit shares the fsync.
func BenchmarkSentMark(b *testing.B) {
	sqliteOnly(b, "lazy commits are SQLite's")
	for _, lazy := range []bool{false, true} {
		name := "durable"
		if lazy {
			name = "lazy"
		}
		b.Run(name, func(b *testing.B) {
			s := openAt(b, testDBPath(b), Options{})
			ctx := context.Background()
			ids := make([]int64, 0, 1024)
			var latencies []time.Duration
			var cpu time.Duration
			for b.Loop() {
				if len(ids) == 0 {
					b.StopTimer()
					for range cap(ids) {
						id, err := s.Enqueue(ctx, OutboxMessage{SessionKey: "v1:bench:1", Platform: "bench", ChatID: "c", Text: "hi"})
						if err != nil {
							b.Fatal(err)
						}
						ids = append(ids, id)
					}
					b.StartTimer()
				}
				id := ids[len(ids)-1]
				ids = ids[:len(ids)-1]
				c0, t0 := processCPU(), time.Now()
				var err error
				if lazy {
					err = s.MarkSent(ctx, id, "x")
				} else {
					err = s.write(ctx, func(ctx context.Context, q querier) error {
						return execOne(ctx, q, "outbox message", id, markSentSQL, "x", toDB(s.now()), id)
					})
				}
				latencies = append(latencies, time.Since(t0))
				cpu += processCPU() - c0
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpu.Microseconds())/float64(b.N), "cpu-µs/mark")
			reportPercentiles(b, latencies, "ack")
		})
	}
}
