package store

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The due-outbox read runs after every commit: with the bound parameters
// the daemon uses, SQLite must walk the pending rows by index, not scan the
// whole outbox (which it did before migration 14, growing with every reply
// ever sent).
func TestDueOutboxWalksThePendingIndex(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "EXPLAIN QUERY PLAN is SQLite's")
	s, _ := openTestStore(t)
	rows, err := s.rq.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+dueOutboxSQL, toDB(time.Now()), 64)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int64
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(plan) == 0 || !strings.Contains(plan[0], "outbox_due") {
		t.Errorf("due outbox plan %q: want the outer loop on index outbox_due", plan)
	}
}

// BenchmarkDueOutbox reads the due rows (none) of an outbox that holds n
// sent rows: the cost must not grow with n.
func BenchmarkDueOutbox(b *testing.B) {
	for _, n := range []int{100, 10_000} {
		b.Run("sent="+strconv.Itoa(n), func(b *testing.B) {
			s := openAt(b, testDBPath(b), Options{})
			ctx := context.Background()
			fillSentOutbox(b, s, n)
			for b.Loop() {
				if _, err := s.DueOutbox(ctx, time.Now(), 64); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// fillSentOutbox writes n sent outbox rows over 100 lanes in one statement:
// what a long-running daemon's outbox holds that the due reads must skip.
func fillSentOutbox(b *testing.B, s *Store, n int) {
	b.Helper()
	err := s.write(context.Background(), func(ctx context.Context, q querier) error {
		_, err := q.ExecContext(ctx, `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
			INSERT INTO outbox (session_key, platform, kind, chat_id, text, state, created_at, updated_at, next_attempt_at)
			SELECT 'v1:bench:' || (i % 100), 'bench', 'dm', 'c', 'hello', 'sent', i, i, i FROM n`, n)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
}
