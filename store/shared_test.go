package store

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// A cluster node reads the due rows of the lanes it owns only, each lane's
// in order, whatever number of lanes it owns (past one query's chunk).
func TestDueOutboxForReadsOnlyTheGivenLanes(t *testing.T) {
	t.Parallel()
	s, clock := openTestStore(t)
	ctx := context.Background()
	var want []int64
	for _, name := range []string{"a", "b", "c"} {
		l := mustEnsure(t, s, name)
		for i := range 2 {
			id, err := s.Enqueue(ctx, OutboxMessage{SessionKey: l.SessionKey, Platform: "test", Kind: "dm",
				ChatID: name, Text: fmt.Sprintf("%s-%d", name, i)})
			if err != nil {
				t.Fatal(err)
			}
			if name != "b" {
				want = append(want, id)
			}
		}
	}
	owned := []string{mustEnsure(t, s, "a").SessionKey, mustEnsure(t, s, "c").SessionKey}
	for i := range dueLanesChunk + 10 { // lanes without rows, pushing "c" into a second chunk
		owned = slices.Insert(owned, 1, fmt.Sprintf("v1:test:none-%d", i))
	}
	got, err := s.DueOutboxFor(ctx, clock.Now(), owned, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, m := range got {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, want) {
		t.Fatalf("due rows of lanes a and c = %v, want %v", ids, want)
	}
	if got, err := s.DueOutboxFor(ctx, clock.Now(), owned, 1); err != nil || len(got) != 1 || got[0].ID != want[0] {
		t.Fatalf("limit 1: %v, %v; want row %d", got, err, want[0])
	}
	if got, err := s.DueOutboxFor(ctx, clock.Now(), nil, 0); err != nil || len(got) != 0 {
		t.Fatalf("no lanes: %v, %v; want none", got, err)
	}
}

// On PostgreSQL an answer's commit notifies AnswerChannel with the message
// id, so the node holding its request answers it without polling.
func TestPostgresRecordAnswerNotifies(t *testing.T) {
	t.Parallel()
	dsn := pgDatabase(t)
	s := openPG(t, dsn, Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "LISTEN "+AnswerChannel); err != nil {
		t.Fatal(err)
	}
	if _, err := s.RecordAnswer(ctx, "v1:api:demo", "msg-1", []byte(`{"reply":"hi"}`)); err != nil {
		t.Fatal(err)
	}
	n, err := conn.WaitForNotification(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n.Channel != AnswerChannel || n.Payload != "msg-1" {
		t.Fatalf("notification %s %q, want %s \"msg-1\"", n.Channel, n.Payload, AnswerChannel)
	}
}

// BenchmarkDueOutboxFor reads the due rows (none) of 100 owned lanes in an
// outbox holding n sent rows: like DueOutbox, the cost must not grow with
// n (both partial indexes cover pending rows only).
func BenchmarkDueOutboxFor(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run(fmt.Sprintf("sent=%d", n), func(b *testing.B) {
			s := openAt(b, testDBPath(b), Options{})
			ctx := context.Background()
			fillSentOutbox(b, s, n)
			keys := make([]string, 100)
			for i := range keys {
				keys[i] = fmt.Sprintf("v1:bench:%d", i)
			}
			for b.Loop() {
				if _, err := s.DueOutboxFor(ctx, time.Now(), keys, 50); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
