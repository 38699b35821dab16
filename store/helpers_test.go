package store

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/internal/testclock"
)

// TestMain doubles as the crash-test child: when crashChildEnv names a
// database, this binary writes batches to it until it is killed.
func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		os.Exit(runCrashChild(path))
	}
	os.Exit(pgtest.Run(m))
}

// testStoreEnv picks the backend the suite runs on: unset or "sqlite", or
// "postgres" (a throwaway server from pgtest; make test runs both).
const testStoreEnv = "GATEWAYD_TEST_STORE"

func onPostgres() bool { return os.Getenv(testStoreEnv) == "postgres" }

// sqliteOnly skips a test of a property only SQLite's file has (its lock
// file, pages, WAL, fsync); the PostgreSQL counterparts are in
// postgres_test.go.
func sqliteOnly(t testing.TB, why string) {
	t.Helper()
	if onPostgres() {
		t.Skipf("SQLite only: %s", why)
	}
}

// fakeClock is a settable clock so tests never sleep.
type fakeClock = testclock.Clock

func newFakeClock() *fakeClock { return testclock.New() }

// testDBPath is where a test's database lives: a file in a temp dir, or on
// PostgreSQL the DSN of a fresh database (reopening it is a restart).
func testDBPath(t testing.TB) string {
	t.Helper()
	if onPostgres() {
		return pgtest.Shared(t).NewDatabase(t)
	}
	return filepath.Join(t.TempDir(), "state.db")
}

// deferForeignKeys is the statement that defers the transaction's foreign
// key checks to COMMIT (PostgreSQL's need the keys to be DEFERRABLE, as
// pgMigrations declares them).
func deferForeignKeys() string {
	if onPostgres() {
		return "SET CONSTRAINTS ALL DEFERRED"
	}
	return "PRAGMA defer_foreign_keys = ON"
}

// locations remembers where openAt opened each store, for tests that
// reopen it (Path has no credentials, so it is not a DSN).
var locations sync.Map

func testLocation(t testing.TB, s *Store) string {
	t.Helper()
	where, ok := locations.Load(s)
	if !ok {
		t.Fatal("store not opened by openAt")
	}
	return where.(string)
}

// openDB opens the store at a testDBPath location on the suite's backend.
func openDB(ctx context.Context, where string, opts Options) (*Store, error) {
	if onPostgres() {
		return OpenPostgres(ctx, where, opts)
	}
	return Open(ctx, where, opts)
}

// openTestStore opens a store in a temp dir with a fake clock and closes it
// at the end of the test.
func openTestStore(t testing.TB) (*Store, *fakeClock) {
	t.Helper()
	clock := newFakeClock()
	s := openAt(t, testDBPath(t), Options{Now: clock.Now})
	return s, clock
}

func openAt(t testing.TB, path string, opts Options) *Store {
	t.Helper()
	s, err := openDB(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
	locations.Store(s, path)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func testLaneKey(name string) LaneKey {
	return LaneKey{SessionKey: "v1:telegram:topic:100:" + name, Platform: "telegram", Kind: "topic", ChatID: "100", TopicID: name}
}

func mustEnsure(t testing.TB, s *Store, name string) Lane {
	t.Helper()
	l, err := s.EnsureLane(context.Background(), testLaneKey(name))
	if err != nil {
		t.Fatalf("EnsureLane(%s): %v", name, err)
	}
	return l
}

// countRows runs a COUNT(*) query on the read pool.
func countRows(t testing.TB, s *Store, query string, args ...any) int {
	t.Helper()
	var n int
	if err := s.rq.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

func turn(l Lane, turnID, user, assistant string) CompletedTurn {
	return CompletedTurn{
		SessionKey: l.SessionKey, Generation: l.Generation, ThreadID: l.ThreadID, TurnID: turnID,
		UserText: user, AssistantText: assistant, Status: "completed",
	}
}
