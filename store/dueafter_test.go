package store

import (
	"context"
	"strconv"
	"testing"
	"time"
)

// BenchmarkDueOutboxAfterWrite is the deliverer's due read as it runs in
// the daemon: right after a commit, so the read connection's page cache
// is stale and the pages the commit changed are read again.
func BenchmarkDueOutboxAfterWrite(b *testing.B) {
	sqliteOnly(b, "the read pool's page cache after a commit")
	s := openAt(b, testDBPath(b), Options{})
	ctx := context.Background()
	var readCPU time.Duration
	i := 0
	for b.Loop() {
		i++
		id, err := s.Enqueue(ctx, OutboxMessage{SessionKey: "v1:bench:" + strconv.Itoa(i%10), Platform: "bench", ChatID: "c", Text: "hello"})
		if err != nil {
			b.Fatal(err)
		}
		cpu := processCPU()
		rows, err := s.DueOutbox(ctx, time.Now(), 50)
		readCPU += processCPU() - cpu
		if err != nil || len(rows) != 1 {
			b.Fatalf("due = %d rows, %v; want the one enqueued", len(rows), err)
		}
		if err := s.MarkSent(ctx, id, "x"); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(readCPU.Microseconds())/float64(b.N), "due-cpu-µs/op")
}
