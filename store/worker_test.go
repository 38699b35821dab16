package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// submitAsync queues fn without waiting for its acknowledgement.
func submitAsync(t *testing.T, s *Store, fn writeFunc) *op {
	t.Helper()
	o := &op{fn: fn, done: make(chan error, 1)}
	if err := s.enqueue(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	return o
}

// blockWorker parks the writer inside an operation until release is
// called, so the next submissions pile up into one batch.
func blockWorker(t *testing.T, s *Store) (release func()) {
	t.Helper()
	started, rel := make(chan struct{}), make(chan struct{})
	o := submitAsync(t, s, func(context.Context, querier) error {
		close(started)
		<-rel
		return nil
	})
	<-started
	return func() {
		close(rel)
		if err := <-o.done; err != nil {
			t.Fatalf("blocking op: %v", err)
		}
	}
}

func cursorNames(t *testing.T, s *Store) map[string]bool {
	t.Helper()
	rows, err := s.rq.QueryContext(context.Background(), "SELECT name FROM cursors")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	names := map[string]bool{}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		names[n] = true
	}
	return names
}

func TestGroupCommitIsolatesFailingOperation(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	commits := s.Commits()
	release := blockWorker(t, s)
	a := submitAsync(t, s, pairOp("one", false))
	f := submitAsync(t, s, pairOp("two", true))
	p := submitAsync(t, s, func(context.Context, querier) error { panic("boom") })
	c := submitAsync(t, s, pairOp("three", false))
	release()
	if err := <-a.done; err != nil {
		t.Fatalf("op before the failing one: %v", err)
	}
	if err := <-f.done; !errors.Is(err, errCrashDeliberate) {
		t.Fatalf("failing op err = %v, want its own error", err)
	}
	if err := <-p.done; err == nil || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("panicking op err = %v", err)
	}
	if err := <-c.done; err != nil {
		t.Fatalf("op after the failing one: %v", err)
	}
	if got := s.Commits() - commits; got != 2 {
		t.Fatalf("commits = %d, want 2 (blocker, then one group commit)", got)
	}
	names := cursorNames(t, s)
	for _, want := range []string{"a-one", "b-one", "a-three", "b-three"} {
		if !names[want] {
			t.Fatalf("row %s missing: %v", want, names)
		}
	}
	if names["f-two"] {
		t.Fatal("the failing operation's row was committed")
	}
}

// TestLoneOperationFailureIsRolledBack: an operation committed on its own
// (no savepoint around it) that fails after writing leaves none of its
// rows, hears its own error, and the writer goes on with the next one; a
// panicking one likewise.
func TestLoneOperationFailureIsRolledBack(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	if err := <-submitAsync(t, s, pairOp("solo", true)).done; !errors.Is(err, errCrashDeliberate) {
		t.Fatalf("failing op err = %v, want its own error", err)
	}
	if err := <-submitAsync(t, s, func(context.Context, querier) error { panic("boom") }).done; err == nil ||
		!strings.Contains(err.Error(), "panicked") {
		t.Fatalf("panicking op err = %v", err)
	}
	if err := <-submitAsync(t, s, pairOp("next", false)).done; err != nil {
		t.Fatalf("op after the failing ones: %v", err)
	}
	names := cursorNames(t, s)
	if names["f-solo"] {
		t.Error("the failing operation's row was committed")
	}
	if !names["a-next"] || !names["b-next"] {
		t.Errorf("rows of the next operation missing: %v", names)
	}
}

// TestCommitFailureFailsWholeBatch makes COMMIT itself fail (a deferred
// foreign key) and checks that no operation of the batch is applied and
// every caller hears the cause.
func TestCommitFailureFailsWholeBatch(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	release := blockWorker(t, s)
	a := submitAsync(t, s, pairOp("one", false))
	bad := submitAsync(t, s, func(ctx context.Context, q querier) error {
		if _, err := q.ExecContext(ctx, deferForeignKeys()); err != nil {
			return err
		}
		_, err := q.ExecContext(ctx, `INSERT INTO messages (session_id, session_key, role, text, turn_id, created_at)
			VALUES (999999, 'k', 'user', 'x', 't', 0)`)
		return err
	})
	c := submitAsync(t, s, pairOp("three", false))
	release()
	for i, o := range []*op{a, bad, c} {
		err := <-o.done
		if err == nil || !strings.Contains(strings.ToUpper(err.Error()), "FOREIGN KEY") || !strings.Contains(err.Error(), "none applied") {
			t.Fatalf("op %d err = %v, want the commit failure with its cause", i, err)
		}
	}
	if names := cursorNames(t, s); len(names) != 0 {
		t.Fatalf("rows of a failed batch are visible: %v", names)
	}
	if err := s.SetCursor(context.Background(), "after", "1"); err != nil {
		t.Fatalf("writer did not recover after a failed commit: %v", err)
	}
}

// TestPerKeyOrder queues many operations per key without waiting; each
// appends its sequence number to its key's cursor, so any reordering shows.
func TestPerKeyOrder(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	const keys, perKey = 4, 50
	var wg sync.WaitGroup
	for k := 0; k < keys; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var ops []*op
			for i := 0; i < perKey; i++ {
				ops = append(ops, submitAsync(t, s, appendOp(fmt.Sprintf("k%d", k), i)))
			}
			for _, o := range ops {
				if err := <-o.done; err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	var want []string
	for i := 0; i < perKey; i++ {
		want = append(want, fmt.Sprint(i))
	}
	for k := 0; k < keys; k++ {
		got, _, err := s.Cursor(context.Background(), fmt.Sprintf("k%d", k))
		if err != nil || got != strings.Join(want, ",") {
			t.Fatalf("key k%d order = %q (%v), want %q", k, got, err, strings.Join(want, ","))
		}
	}
}

func appendOp(name string, i int) writeFunc {
	return func(ctx context.Context, q querier) error {
		_, err := q.ExecContext(ctx, `INSERT INTO cursors (name, value, updated_at) VALUES (?1, ?2, 0)
			ON CONFLICT (name) DO UPDATE SET value = cursors.value || ',' || ?2`, name, fmt.Sprint(i))
		return err
	}
}

func TestCancelledSubmissionIsNotApplied(t *testing.T) {
	t.Parallel()
	s, _ := openTestStore(t)
	release := blockWorker(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ran := false
	err := s.write(ctx, func(context.Context, querier) error { ran = true; return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	release()
	if err := s.SetCursor(context.Background(), "x", "1"); err != nil { // a barrier: the queue is drained
		t.Fatal(err)
	}
	if ran {
		t.Fatal("an abandoned submission was applied")
	}
}

func TestBackPressure(t *testing.T) {
	t.Parallel()
	s := openAt(t, testDBPath(t), Options{QueueSize: 1})
	release := blockWorker(t, s)
	queued := submitAsync(t, s, pairOp("queued", false)) // fills the queue
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := s.SetCursor(ctx, "blocked", "1")
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "not queued") {
		t.Fatalf("err = %v, want a deadline while the queue is full", err)
	}
	if d := s.QueueDepth(); d != 1 {
		t.Fatalf("QueueDepth = %d, want 1", d)
	}
	release()
	if err := <-queued.done; err != nil {
		t.Fatal(err)
	}
}

func TestCloseDrainsThenRefuses(t *testing.T) {
	t.Parallel()
	path := testDBPath(t)
	s, err := openDB(context.Background(), path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	release := blockWorker(t, s)
	var ops []*op
	for i := 0; i < 5; i++ {
		ops = append(ops, submitAsync(t, s, pairOp(fmt.Sprint(i), false)))
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	release()
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	for i, o := range ops {
		if err := <-o.done; err != nil {
			t.Fatalf("op %d submitted before Close: %v", i, err)
		}
	}
	if err := s.SetCursor(context.Background(), "late", "1"); !errors.Is(err, ErrClosed) {
		t.Fatalf("write after Close err = %v, want ErrClosed", err)
	}
	if err := s.Ping(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Ping after Close err = %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	reopened := openAt(t, path, Options{})
	if n := len(cursorNames(t, reopened)); n != 10 {
		t.Fatalf("rows after reopen = %d, want 10", n)
	}
}
