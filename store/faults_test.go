package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestSecondOpenIsLocked(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "the lock file (TestPostgresSecondStoreIsRefused checks the advisory lock)")
	path := testDBPath(t)
	first, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(context.Background(), path, Options{})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open err = %v, want ErrLocked", err)
	}
	for _, want := range []string{path, "another gatewayd", fmt.Sprintf("pid %d", os.Getpid())} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("ErrLocked message %q does not mention %q", err, want)
		}
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	openAt(t, path, Options{}) // the lock goes with Close
}

// pageCount reads the database size in pages with a plain connection.
func pageCount(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("PRAGMA page_count").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// fillTurns commits large turns until one fails and returns how many
// succeeded and the failure.
func fillTurns(t *testing.T, s *Store, l Lane, size int) (int, error) {
	t.Helper()
	text := strings.Repeat("lorem ipsum ", size/12)
	for i := 0; i < 500; i++ {
		if _, err := s.CommitTurn(context.Background(), turn(l, fmt.Sprintf("fill-%d", i), text, text)); err != nil {
			return i, err
		}
	}
	t.Fatal("the database never filled up")
	return 0, nil
}

func assertTurnRows(t *testing.T, s *Store, ok int) {
	t.Helper()
	if n := countRows(t, s, "SELECT COUNT(*) FROM messages WHERE turn_id LIKE 'fill-%'"); n != 2*ok {
		t.Fatalf("turn rows = %d, want %d (every acknowledged turn, nothing of the failed one)", n, 2*ok)
	}
	failed := fmt.Sprintf("fill-%d", ok)
	if n := countRows(t, s, "SELECT COUNT(*) FROM messages WHERE turn_id = ?", failed); n != 0 {
		t.Fatalf("the failed turn left %d rows behind", n)
	}
}

// TestDiskFullPageLimit caps the file with max_page_count (deterministic,
// needs no root): the failing statement reports SQLITE_FULL, its
// operation alone is rolled back, and the store keeps serving reads.
func TestDiskFullPageLimit(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "max_page_count caps the file")
	path := testDBPath(t)
	s := openAt(t, path, Options{})
	l := mustEnsure(t, s, "a")
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	limit := fmt.Sprintf("PRAGMA max_page_count = %d", pageCount(t, path)+40)
	s = openAt(t, path, Options{writePragmas: []string{limit}})
	ok, err := fillTurns(t, s, l, 8000)
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "database or disk is full") {
		t.Fatalf("err = %v, want ErrDiskFull naming the cause", err)
	}
	t.Logf("after %d turns: %v", ok, err)
	assertTurnRows(t, s, ok)
	lane, err := s.Lane(context.Background(), l.SessionKey)
	if err != nil || lane.Turns != int64(ok) {
		t.Fatalf("read after disk full: %+v, %v; want %d turns", lane, err, ok)
	}
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping after disk full: %v", err)
	}
}

// mountTmpfs mounts a small tmpfs (root only) and unmounts it at the end.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (needs root): %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", dir, err, out)
		}
	})
	return dir
}

// fillDisk writes a file until the file system is full.
func fillDisk(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	chunk := make([]byte, 4096)
	for {
		if _, err := f.Write(chunk); err != nil {
			return
		}
	}
}

// TestDiskFullTmpfs runs out of real disk space: the commit fails with a
// named cause, nothing partial is visible, and once space is freed the
// same store writes again; a reopen shows exactly the acknowledged turns.
func TestDiskFullTmpfs(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "a full tmpfs under the file")
	dir := mountTmpfs(t, "2m")
	path := filepath.Join(dir, "state.db")
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	l := mustEnsure(t, s, "a")
	for i := 0; i < 3; i++ { // acknowledged before the disk fills: must survive
		if _, err := s.CommitTurn(context.Background(), turn(l, fmt.Sprintf("pre-%d", i), "q", "a")); err != nil {
			t.Fatal(err)
		}
	}
	filler := filepath.Join(dir, "filler")
	fillDisk(t, filler)
	ok, err := fillTurns(t, s, l, 16000)
	if !errors.Is(err, ErrDiskFull) && !errors.Is(err, ErrIO) {
		t.Fatalf("err = %v, want ErrDiskFull (or ErrIO) naming the cause", err)
	}
	t.Logf("after %d turns: %v", ok, err)
	assertTurnRows(t, s, ok)
	if _, err := s.Lane(context.Background(), l.SessionKey); err != nil {
		t.Fatalf("read after disk full: %v", err)
	}
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CommitTurn(context.Background(), turn(l, "after-space-freed", "q", "a")); err != nil {
		t.Fatalf("write after space was freed: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	reopened := openAt(t, path, Options{})
	assertTurnRows(t, reopened, ok)
	if n := countRows(t, reopened, "SELECT COUNT(*) FROM messages WHERE turn_id LIKE 'pre-%' OR turn_id = 'after-space-freed'"); n != 8 {
		t.Fatalf("acknowledged turns before and after the full disk have %d rows, want 8", n)
	}
}

// TestReadOnly covers a database that refuses writes. As root, chmod 0444
// does not stop writes, so the file-level cases use SQLite's own read-only
// modes through test hooks, and a read-only remount of a tmpfs gives the
// real EROFS.
func TestReadOnly(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "a read-only file or query_only connection")
	ctx := context.Background()
	t.Run("open read-only file", func(t *testing.T) {
		path := testDBPath(t)
		s := openAt(t, path, Options{})
		mustEnsure(t, s, "a")
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		_, err := Open(ctx, path, Options{writeReadOnly: true})
		if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), path) {
			t.Fatalf("Open err = %v, want ErrReadOnly naming %s", err, path)
		}
		t.Log(err)
		openAt(t, path, Options{}) // the failed Open released the lock
	})
	t.Run("submission refused", func(t *testing.T) {
		path := testDBPath(t)
		s := openAt(t, path, Options{})
		l := mustEnsure(t, s, "a")
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = openAt(t, path, Options{writePragmas: []string{"PRAGMA query_only = 1"}})
		err := s.BindThread(ctx, l.SessionKey, l.Generation, "t1")
		if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), "readonly") {
			t.Fatalf("BindThread err = %v, want ErrReadOnly", err)
		}
		t.Log(err)
		got, err := s.Lane(ctx, l.SessionKey)
		if err != nil || got.ThreadID != "" {
			t.Fatalf("read after refused write: %+v, %v", got, err)
		}
	})
	t.Run("read-only file system", func(t *testing.T) {
		dir := mountTmpfs(t, "4m")
		path := filepath.Join(dir, "state.db")
		s, err := Open(ctx, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		mustEnsure(t, s, "a")
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
			t.Skipf("remount read-only: %v %s", err, out)
		}
		_, err = Open(ctx, path, Options{})
		if !errors.Is(err, ErrReadOnly) || !strings.Contains(err.Error(), path) {
			t.Fatalf("Open on a read-only file system err = %v, want ErrReadOnly naming the path", err)
		}
		t.Log(err)
	})
}

// TestDiskFullInBatch: SQLite rolls the whole transaction back when a
// statement hits the page limit; only the operation that needed the space
// fails, its batch neighbours are replayed and committed.
func TestDiskFullInBatch(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "max_page_count caps the file")
	path := testDBPath(t)
	s := openAt(t, path, Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	limit := fmt.Sprintf("PRAGMA max_page_count = %d", pageCount(t, path)+20)
	core, logs := observer.New(zap.InfoLevel)
	s = openAt(t, path, Options{Logger: zap.New(core), writePragmas: []string{limit}})
	release := blockWorker(t, s)
	small1 := submitAsync(t, s, pairOp("one", false))
	huge := submitAsync(t, s, func(ctx context.Context, q querier) error {
		_, err := q.ExecContext(ctx, "INSERT INTO cursors (name, value, updated_at) VALUES ('huge', ?, 0)",
			strings.Repeat("x", 1<<20))
		return err
	})
	small2 := submitAsync(t, s, pairOp("three", false))
	release()
	if err := <-huge.done; !errors.Is(err, ErrDiskFull) {
		t.Fatalf("oversized op err = %v, want ErrDiskFull", err)
	}
	for i, o := range []*op{small1, small2} {
		if err := <-o.done; err != nil {
			t.Fatalf("neighbour %d of the failed op: %v", i, err)
		}
	}
	names := cursorNames(t, s)
	if len(names) != 4 || names["huge"] {
		t.Fatalf("rows = %v, want the four rows of the small ops only", names)
	}
	if n := logs.FilterMessage("store.transaction_aborted").Len(); n != 1 {
		t.Fatalf("transaction aborts logged = %d, want 1 (the replay path ran)", n)
	}
}
