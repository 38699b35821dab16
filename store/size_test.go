package store

import (
	"context"
	"os"
	"strings"
	"testing"
)

// Size is the database file plus its WAL as the file system has them, and
// grows when turns are committed; CountLanes counts every lane.
func TestSizeAndCountLanes(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	ctx := context.Background()
	before, err := s.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := s.CountLanes(ctx); err != nil || n != 0 {
		t.Fatalf("CountLanes on a new store = %d, %v; want 0", n, err)
	}
	a := mustEnsure(t, s, "a")
	mustEnsure(t, s, "b")
	for i := range 20 {
		if _, err := s.CommitTurn(ctx, turn(a, "t"+string(rune('a'+i)), strings.Repeat("question ", 200), strings.Repeat("answer ", 200))); err != nil {
			t.Fatal(err)
		}
	}
	after, err := s.Size(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if s.d == pgDialect {
		var server int64
		if err := s.rq.QueryRowContext(ctx, `SELECT pg_database_size(current_database())`).Scan(&server); err != nil {
			t.Fatal(err)
		}
		if after.DatabaseBytes != server || after.WALBytes != 0 {
			t.Errorf("size %+v, the server says %d", after, server)
		}
	} else {
		db, err := os.Stat(s.path)
		if err != nil {
			t.Fatal(err)
		}
		if after.DatabaseBytes != db.Size() {
			t.Errorf("DatabaseBytes = %d, the file has %d", after.DatabaseBytes, db.Size())
		}
	}
	if after.Total() <= before.Total() || after.Total() != after.DatabaseBytes+after.WALBytes {
		t.Errorf("size before %+v, after 20 turns %+v; want it to grow and Total to add up", before, after)
	}
	if n, err := s.CountLanes(ctx); err != nil || n != 2 {
		t.Errorf("CountLanes = %d, %v; want 2", n, err)
	}
}
