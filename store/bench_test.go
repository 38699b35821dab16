package store

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/internal/pgtest"
)

// BenchmarkDurableWrites measures acknowledged (committed, fsynced) writes
// per second through the worker, one RecordInbound per operation, with 1, 8
// and 64 concurrent submitters, and the acknowledgement latency.
// On PostgreSQL the server is a durable one of its own (fsync and
// synchronous_commit on), not the suite's fast shared server.
func BenchmarkDurableWrites(b *testing.B) {
	where := func(b *testing.B) string { return testDBPath(b) }
	if onPostgres() {
		srv := pgtest.Start(b, pgtest.Options{Durable: true})
		where = func(b *testing.B) string { return srv.NewDatabase(b) }
	}
	for _, submitters := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("submitters=%d", submitters), func(b *testing.B) {
			s := openAt(b, where(b), Options{})
			ctx := context.Background()
			latencies := make([]time.Duration, b.N)
			var next atomic.Int64
			commits := s.Commits()
			var wg sync.WaitGroup
			b.ResetTimer()
			cpu := processCPU()
			start := time.Now()
			for w := 0; w < submitters; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := next.Add(1) - 1
						if i >= int64(b.N) {
							return
						}
						t0 := time.Now()
						_, _, err := s.RecordInbound(ctx, Inbound{Platform: "bench", MessageID: fmt.Sprint(i),
							SessionKey: "v1:bench:" + fmt.Sprint(i%100), Text: "hello"})
						latencies[i] = time.Since(t0)
						if err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(processCPU()-cpu)/float64(time.Microsecond)/float64(b.N), "cpu-µs/write")
			b.ReportMetric(float64(b.N)/elapsed.Seconds(), "writes/s")
			b.ReportMetric(float64(b.N)/float64(max(1, s.Commits()-commits)), "ops/commit")
			reportPercentiles(b, latencies, "ack")
		})
	}
}

// processCPU is this process's CPU time so far (user + system, rusage):
// unlike wall time it does not count what other processes on a shared
// machine take.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportPercentiles(b *testing.B, latencies []time.Duration, name string) {
	slices.Sort(latencies)
	at := func(p float64) float64 {
		return float64(latencies[int(p*float64(len(latencies)-1))].Microseconds())
	}
	b.ReportMetric(at(0.50), name+"-p50-µs")
	b.ReportMetric(at(0.99), name+"-p99-µs")
}

// populateLanes inserts n lanes with their sessions in one transaction
// through the worker (set-based, so 100,000 lanes take a moment).
func populateLanes(b *testing.B, s *Store, n int) {
	b.Helper()
	err := s.write(context.Background(), func(ctx context.Context, q querier) error {
		if _, err := q.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
			INSERT INTO sessions (id, session_key, generation, started_at) SELECT i, 'v1:bench:' || i, 1, i FROM n`, n); err != nil {
			return err
		}
		_, err := q.ExecContext(ctx, `INSERT INTO gateway_routing (session_key, platform, kind, chat_id, session_id,
			codex_thread_id, binding, created_at, updated_at, last_active_at)
			SELECT session_key, 'bench', 'dm', id, id, 'thread-' || id, 'confirmed', id, id, id FROM sessions`)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRoutingLookup measures Lane() on tables of 1,000, 100,000 and
// 1,000,000 lanes: a primary-key lookup, so the cost must stay flat. The
// million-lane table takes a while to build; -short skips it.
func BenchmarkRoutingLookup(b *testing.B) {
	for _, lanes := range []int{1_000, 100_000, 1_000_000} {
		b.Run(fmt.Sprintf("lanes=%d", lanes), func(b *testing.B) {
			if testing.Short() && lanes > 100_000 {
				b.Skip("-short: no million-lane table")
			}
			benchmarkRoutingLookup(b, lanes)
		})
	}
}

func benchmarkRoutingLookup(b *testing.B, lanes int) {
	s := openAt(b, testDBPath(b), Options{})
	populateLanes(b, s, lanes)
	ctx := context.Background()
	var latencies []time.Duration
	i := 0
	for b.Loop() {
		key := fmt.Sprintf("v1:bench:%d", 1+(i*7919)%lanes)
		i++
		t0 := time.Now()
		l, err := s.Lane(ctx, key)
		latencies = append(latencies, time.Since(t0))
		if err != nil || l.SessionKey != key {
			b.Fatalf("Lane(%s) = %+v, %v", key, l, err)
		}
	}
	reportPercentiles(b, latencies, "lookup")
}
