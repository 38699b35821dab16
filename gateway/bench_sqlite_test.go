package gateway

import (
	"context"
	"io"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// BenchmarkMessageOverheadSQLite is BenchmarkMessageOverhead with what
// production pays besides codex: the real SQLite store (fsync per group
// commit) and an info-level JSON logger writing to a discarded sink. One
// lane, each message sent when the last was answered. Besides ns/op it
// reports the process CPU per message (rusage, so noise from other
// processes on the machine does not count), the store's commits per
// message, and the gateway's own wall time from Deliver to turn/start and
// from the end of the turn to the platform's Send.
func BenchmarkMessageOverheadSQLite(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(b.TempDir(), "bench.db"), store.Options{Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	cx, p := newFakeCodex(), newFakePlatform()
	var started, ended time.Time
	cx.run = func(_ context.Context, _, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		started = time.Now()
		defer func() { ended = time.Now() }()
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "re: " + text}, nil
	}
	g, err := New(Config{MaxLive: 16, QueueLimit: 10, Logger: productionLogger()}.WithDefaults(), st, cx)
	if err != nil {
		b.Fatal(err)
	}
	g.AddPlatform(p)
	runGateway(b, g)
	addr := apiAddr("bench")
	toStart := make([]time.Duration, 0, b.N)
	toSend := make([]time.Duration, 0, b.N)
	commits, statements := st.Commits(), st.Statements()
	cpu := processCPU()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		id := strconv.Itoa(i)
		sent := time.Now()
		if _, err := g.Deliver(ctx, Inbound{Address: addr, MessageID: id, SenderID: "u", Text: "hi"}); err != nil {
			b.Fatal(err)
		}
		for o := p.next(b); o.InReplyTo != id; o = p.next(b) {
		}
		// run wrote started and ended before the reply was sent.
		toStart = append(toStart, started.Sub(sent))
		toSend = append(toSend, time.Since(ended))
	}
	b.StopTimer()
	b.ReportMetric(float64(processCPU()-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/msg")
	b.ReportMetric(float64(st.Commits()-commits)/float64(b.N), "commits/msg")
	b.ReportMetric(float64(st.Statements()-statements)/float64(b.N), "statements/msg")
	b.ReportMetric(medianMicros(toStart), "in-to-start-µs")
	b.ReportMetric(medianMicros(toSend), "end-to-send-µs")
}

// productionLogger logs as the daemon does by default (info, JSON), to a
// sink that costs nothing, so encoding is measured but not I/O.
func productionLogger() *zap.Logger {
	enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
	return zap.New(zapcore.NewCore(enc, zapcore.AddSync(io.Discard), zapcore.InfoLevel))
}

func runGateway(b *testing.B, g *Gateway) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g.Run(ctx) }()
	b.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("Run: %v", err)
		}
	})
	select {
	case <-g.Ready():
	case <-time.After(5 * time.Second):
		b.Fatal("gateway not ready")
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func medianMicros(ds []time.Duration) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return float64(s[len(s)/2].Microseconds())
}
