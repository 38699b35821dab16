package cluster

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// turnBytes is what one turn adds to a rollout: 10,394 bytes measured for
// a short turn on a resumed thread (TestShippedRolloutResumesWith...).
const turnBytes = 10 << 10

// syntheticTurn is turnBytes of rollout-like JSONL: several lines, each
// complete.
func syntheticTurn(n int) string {
	var b strings.Builder
	for i := 0; b.Len() < turnBytes-200; i++ {
		fmt.Fprintf(&b, `{"timestamp":"2026-12-01T10:00:00.000Z","type":"response_item","payload":{"turn":%d,"line":%d,"text":%q}}`+"\n",
			n, i, strings.Repeat("lorem ipsum ", 60))
	}
	return b.String()
}

// cpuTime is this process's user+system CPU time: steadier than wall time
// on a shared machine. The database server's CPU is not included.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkShipTurn is the per-turn cost on the owner: append one turn to
// the rollout, ship it (fence, lock, tail check, insert, commit).
func BenchmarkShipTurn(b *testing.B) {
	f := newRolloutFixture(b)
	f.appendLines(syntheticTurn(0))
	f.ship()
	turn := syntheticTurn(1)
	var shipped int64
	cpu0 := cpuTime()
	for b.Loop() {
		f.appendLines(turn)
		shipped += f.ship().Bytes
	}
	b.ReportMetric(float64(shipped)/float64(b.N), "shipped-B/op")
	b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
}

// BenchmarkRestore is the takeover cost of bringing a 150-turn thread
// (about 1.5 MB) into an empty CODEX_HOME.
func BenchmarkRestore(b *testing.B) {
	for _, turns := range []int{1, 150} {
		b.Run(fmt.Sprintf("turns=%d", turns), func(b *testing.B) {
			f := newRolloutFixture(b)
			for i := range turns {
				f.appendLines(syntheticTurn(i))
				f.ship()
			}
			ctx := testContext(b)
			cpu0 := cpuTime()
			for b.Loop() {
				home, err := os.MkdirTemp(b.TempDir(), "home")
				if err != nil {
					b.Fatal(err)
				}
				if _, err := f.rollouts.Restore(ctx, home, testThread); err != nil {
					b.Fatal(err)
				}
				os.RemoveAll(home)
			}
			b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
		})
	}
}

// BenchmarkLease is the database work of a takeover and of keeping a lane:
// taking an expired lease (the step after a TTL runs out) and one renewal.
func BenchmarkLease(b *testing.B) {
	dsn := newDatabase(b)
	clock := installTestClock(b, dsn)
	a := newNode(b, dsn, "node-a")
	ctx := testContext(b)
	b.Run("takeover", func(b *testing.B) {
		var cpu time.Duration
		for b.Loop() {
			b.StopTimer()
			clock.Advance(time.Hour) // every lease so far has expired
			b.StartTimer()
			cpu0 := cpuTime()
			if _, ok, err := a.Acquire(ctx, "lane", time.Minute); err != nil || !ok {
				b.Fatalf("Acquire: ok=%v err=%v", ok, err)
			}
			cpu += cpuTime() - cpu0
		}
		b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N), "cpu-ns/op")
	})
	b.Run("renew", func(b *testing.B) {
		clock.Advance(time.Hour)
		l, ok, err := a.Acquire(ctx, "kept", time.Minute)
		if err != nil || !ok {
			b.Fatalf("Acquire: ok=%v err=%v", ok, err)
		}
		cpu0 := cpuTime()
		for b.Loop() {
			if err := a.Renew(ctx, l, time.Minute); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((cpuTime()-cpu0).Nanoseconds())/float64(b.N), "cpu-ns/op")
	})
}
