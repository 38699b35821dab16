package gateway

import (
	"context"
	"runtime"
	"strconv"
	"testing"

	"go.uber.org/zap"
)

// BenchmarkMessageOverhead measures the gateway's own cost per message —
// authorisation, inbox, queue, journal, ensure, turn bookkeeping, commit,
// outbox delivery — with an instant fake Codex and an in-memory Store.
func BenchmarkMessageOverhead(b *testing.B) {
	h := newHarness(b, func(c *Config) { c.Logger = zap.NewNop() })
	h.start(b)
	ctx := context.Background()
	addr := apiAddr("bench")
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		id := strconv.Itoa(i)
		if _, err := h.g.Deliver(ctx, Inbound{Address: addr, MessageID: id, SenderID: "u", Text: "hi"}); err != nil {
			b.Fatal(err)
		}
		for o := h.p.next(b); o.InReplyTo != id; o = h.p.next(b) {
		}
	}
}

// BenchmarkLiveLaneMemory reports the heap a live, idle lane costs the
// gateway (its thread loaded in codex, no goroutine) with 10,000 such lanes.
func BenchmarkLiveLaneMemory(b *testing.B) {
	const lanes = 10_000
	ctx := context.Background()
	for range b.N {
		g, err := New(Config{MaxLive: lanes + 1, Logger: zap.NewNop()}.WithDefaults(), newFakeStore(), newFakeCodex())
		if err != nil {
			b.Fatal(err)
		}
		keys := make([]string, lanes)
		for i := range keys {
			keys[i] = strconv.Itoa(1_000_000_000 + i)
		}
		before := heapInUse()
		for i := range lanes {
			addr := Address{Platform: "telegram", Kind: LaneTopic, ChatID: "-1001234567890", TopicID: keys[i]}
			l := g.lanes.get(addr)
			g.threads.markLive(ctx, l, "019ea688-7067-7461-a6a6-4237815e"+keys[i][6:])
		}
		after := heapInUse()
		if s := g.Stats(); s.LiveLanes != lanes {
			b.Fatalf("live lanes %d", s.LiveLanes)
		}
		b.ReportMetric(float64(after-before)/lanes, "bytes/lane")
		runtime.KeepAlive(g)
	}
}

func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
