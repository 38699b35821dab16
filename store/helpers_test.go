package store

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// TestMain doubles as the crash-test child: when crashChildEnv names a
// database, this binary writes batches to it until it is killed.
func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		os.Exit(runCrashChild(path))
	}
	os.Exit(m.Run())
}

// fakeClock is a settable clock so tests never sleep.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func testDBPath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "state.db")
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
	s, err := Open(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("Open(%s): %v", path, err)
	}
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
	if err := s.readDB.QueryRowContext(context.Background(), query, args...).Scan(&n); err != nil {
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
