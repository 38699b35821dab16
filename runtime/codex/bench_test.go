package codex

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/zap"
)

// BenchmarkRoundTrip: one request/response through the client to the fake
// app-server process and back.
func BenchmarkRoundTrip(b *testing.B) {
	fc := startFake(b, fakeConfig{noLogs: true})
	ctx := context.Background()
	for b.Loop() {
		if err := fc.Ping(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRoundTripParallel: concurrent requests sharing the connection.
func BenchmarkRoundTripParallel(b *testing.B) {
	fc := startFake(b, fakeConfig{noLogs: true})
	ctx := context.Background()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := fc.Ping(ctx); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

const benchThreads = 1000

// floodConsumer is one thread's running turn in the routing benchmarks:
// the real mailbox and collector, counting deltas.
type floodConsumer struct {
	sub    *turnSub
	col    *collector
	deltas atomic.Int64
}

// floodClient registers benchThreads threads, each with a running turn
// "flood" drained by its own goroutine, as RunTurn would.
func floodClient(cn *conn) (*Client, []*floodConsumer, []string, func()) {
	c := &Client{log: zap.NewNop(), threads: map[string]*threadState{}}
	ids := make([]string, benchThreads)
	consumers := make([]*floodConsumer, benchThreads)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range ids {
		ids[i] = fmt.Sprintf("0199bench-%04d", i)
		ts := c.threadFor(ids[i])
		fcn := &floodConsumer{sub: newTurnSub(cn)}
		fcn.col = &collector{log: c.log, res: &TurnResult{}, turnID: "flood", seen: map[string]bool{},
			ev: TurnEvents{Delta: func(string) { fcn.deltas.Add(1) }}}
		ts.turn = fcn.sub
		consumers[i] = fcn
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-fcn.sub.wake:
					fcn.col.drain(fcn.sub)
				case <-stop:
					return
				}
			}
		}()
	}
	return c, consumers, ids, func() { close(stop); wg.Wait() }
}

// waitDelivered spins until every consumer has seen want deltas.
func waitDelivered(b *testing.B, consumers []*floodConsumer, want int64) {
	for _, fcn := range consumers {
		for fcn.deltas.Load() < want {
			select {
			case <-b.Context().Done():
				b.Fatal("benchmark cancelled")
			default:
			}
		}
	}
}

// BenchmarkRouting1000Threads: client-side routing throughput. One op is a
// round of 1,000 delta notifications, one per thread, interleaved on one
// stream, read, decoded, routed and consumed by 1,000 turn goroutines.
// The stream is an in-memory pipe so the figure is the client's alone.
func BenchmarkRouting1000Threads(b *testing.B) {
	pr, pw := io.Pipe()
	cn := newConn(pr, io.Discard, zap.NewNop())
	c, consumers, ids, stop := floodClient(cn)
	defer stop()
	cn.onNotify, cn.onEvent = c.route, c.routeEvent
	go cn.readLoop()
	defer pw.Close()

	var round []byte
	for _, id := range ids {
		round = fmt.Appendf(round, `{"method":"item/agentMessage/delta","params":{"threadId":%q,"turnId":"flood","itemId":"i","delta":"x"},"emittedAtMs":1}`+"\n", id)
	}
	var sent int64
	for b.Loop() {
		if _, err := pw.Write(round); err != nil {
			b.Fatal(err)
		}
		sent++
	}
	waitDelivered(b, consumers, sent)
	b.ReportMetric(float64(sent*benchThreads)/b.Elapsed().Seconds(), "notifications/s")
}

// BenchmarkRoutingFake1000Threads: the same, end to end from the fake
// app-server process (its JSON encoding and the pipe included).
func BenchmarkRoutingFake1000Threads(b *testing.B) {
	fc := startFake(b, fakeConfig{noLogs: true})
	cn := fc.conn(b)
	fc.threads = nil // replaced by the flood threads below
	c, consumers, ids, stop := floodClient(cn)
	defer stop()
	fc.tmu.Lock()
	fc.threads = c.threads
	fc.tmu.Unlock()

	ctx := context.Background()
	var sent int64
	for b.Loop() {
		if err := cn.call(ctx, "fake/flood", map[string]any{"threads": ids, "count": 1}, nil); err != nil {
			b.Fatal(err)
		}
		sent++
	}
	waitDelivered(b, consumers, sent)
	b.ReportMetric(float64(sent*benchThreads)/b.Elapsed().Seconds(), "notifications/s")
}
