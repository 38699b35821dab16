package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"modernc.org/sqlite"
)

// TestConnectionSettings checks the durability settings the package
// comment promises and that the read pool cannot write.
func TestConnectionSettings(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "SQLite PRAGMAs and fdatasync")
	s, _ := openTestStore(t)
	ctx := context.Background()
	tests := []struct {
		name, pragma, want string
	}{
		{"WAL", "PRAGMA journal_mode", "wal"},
		{"synchronous FULL", "PRAGMA synchronous", "2"},
		{"foreign keys", "PRAGMA foreign_keys", "1"},
		{"busy timeout", "PRAGMA busy_timeout", "5000"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got string
			err := s.write(ctx, func(ctx context.Context, q querier) error {
				return q.QueryRowContext(ctx, tc.pragma).Scan(&got)
			})
			if err != nil || got != tc.want {
				t.Fatalf("%s on the write connection = %q (%v), want %q", tc.pragma, got, err, tc.want)
			}
		})
	}
	if !sqlite.FdatasyncEnabled() {
		t.Fatal("commits do not use fdatasync")
	}
	_, err := s.readDB.ExecContext(ctx, "INSERT INTO cursors (name, value, updated_at) VALUES ('x', 'y', 0)")
	if !errors.Is(classify(err), ErrReadOnly) {
		t.Fatalf("write through the read pool err = %v, want read-only", err)
	}
}

// TestOpenPathNeedsEscaping: the path goes into a file: URI, so characters
// with a meaning there must not change which file is opened.
func TestOpenPathNeedsEscaping(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "file paths")
	dir := filepath.Join(t.TempDir(), "a dir?x=1#frag%20")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "state.db")
	s := openAt(t, path, Options{})
	mustEnsure(t, s, "a")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("database not at %s: %v", path, err)
	}
	reopened := openAt(t, path, Options{})
	if _, err := reopened.Lane(context.Background(), testLaneKey("a").SessionKey); err != nil {
		t.Fatalf("lane not found after reopen: %v", err)
	}
}
