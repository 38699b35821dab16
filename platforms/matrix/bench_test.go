package matrix

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/matrix/matrixtest"
	"github.com/gatewayd/gatewayd/store"
)

// countSink counts deliveries and signals each one.
type countSink struct {
	mu   sync.Mutex
	n    int
	each chan gateway.Inbound
}

func (s *countSink) Deliver(_ context.Context, in gateway.Inbound) (bool, error) {
	s.mu.Lock()
	s.n++
	s.mu.Unlock()
	if s.each != nil {
		s.each <- in
	}
	return false, nil
}

func (s *countSink) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

func benchAdapter(b *testing.B, srv *matrixtest.Server, snk gateway.Sink) *Adapter {
	st, err := store.Open(context.Background(), filepath.Join(b.TempDir(), "bench.db"), store.Options{Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	cfg := testConfig(srv, st)
	a, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = a.Run(ctx, snk); close(done) }()
	b.Cleanup(func() { cancel(); <-done })
	<-a.Ready()
	return a
}

// BenchmarkMatrixInbound: events per second the adapter takes from the
// fake homeserver (sync, parse, lane, Deliver; the sync token saved in a
// real SQLite store), posted in bursts of 100 across 4 rooms.
func BenchmarkMatrixInbound(b *testing.B) {
	srv := matrixtest.New(b)
	var rooms []string
	for range 4 {
		rooms = append(rooms, joinedRoom(srv))
	}
	snk := &countSink{}
	benchAdapter(b, srv, snk)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		srv.Post(rooms[i%len(rooms)], alice, fmt.Sprint("message ", i))
		if i%100 == 99 || i == b.N-1 {
			want := i + 1
			if err := srv.WaitFor(ctx, func() bool { return snk.count() >= want }); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "events/s")
}

// BenchmarkMatrixMessageToReply: what the Matrix lane adds to one
// exchange, codex left out: a message posted at the homeserver, synced
// and delivered, then a reply sent (HTML rendering, txn id, PUT) and
// stored by the homeserver.
func BenchmarkMatrixMessageToReply(b *testing.B) {
	srv := matrixtest.New(b)
	room := joinedRoom(srv)
	snk := &countSink{each: make(chan gateway.Inbound, 1)}
	a := benchAdapter(b, srv, snk)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		srv.Post(room, alice, "**question** number "+fmt.Sprint(i))
		in := <-snk.each
		out := gateway.Outbound{ID: int64(i + 1), Address: in.Address, Kind: gateway.OutReply, Text: "*answer* to " + in.Text}
		if _, err := a.Send(ctx, out); err != nil {
			b.Fatal(err)
		}
	}
}
