package store

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatewayd/gatewayd/internal/pgtest"
)

// shortOutage is the retry window of tests whose database stays away: it
// is a lasting outage once this has passed.
const shortOutage = 300 * time.Millisecond

// loggedOnce returns a logger that records every entry and a channel
// closed at the first entry with message msg: the signal that the store
// has reached that point (a retry, a read-back).
func loggedOnce(msg string) (*zap.Logger, *observer.ObservedLogs, <-chan struct{}) {
	core, logs := observer.New(zap.DebugLevel)
	seen := make(chan struct{})
	var once sync.Once
	log := zap.New(core, zap.Hooks(func(e zapcore.Entry) error {
		if e.Message == msg {
			once.Do(func() { close(seen) })
		}
		return nil
	}))
	return log, logs, seen
}

// waitSignal waits for ch; the timeout only guards against a hang.
func waitSignal(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(time.Minute):
		t.Fatalf("no %s within a minute", what)
	}
}

// The first write after a PostgreSQL restart used to fail: its BEGIN ran on
// the connection the restart had ended ("terminating connection due to
// administrator command"). Nothing was applied, so the store reconnects
// and runs it again: the caller sees success. A read on the read pool's
// dead connections is run again likewise.
func TestPostgresFirstWriteAfterRestartSucceeds(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t, pgtest.Options{})
	log, logs, _ := loggedOnce("")
	s := openPG(t, srv.NewDatabase(t), Options{Logger: log})
	ctx := context.Background()
	if err := s.SetCursor(ctx, "before", "1"); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Cursor(ctx, "before"); err != nil {
		t.Fatal(err)
	}
	if err := srv.FastRestart(); err != nil {
		t.Fatal(err)
	}
	if _, found, err := s.Cursor(ctx, "before"); err != nil || !found {
		t.Fatalf("first read after the restart: found %v, %v", found, err)
	}
	if err := s.SetCursor(ctx, "after", "1"); err != nil {
		t.Fatalf("first write after the restart: %v", err)
	}
	retries := logs.FilterMessage("store.write_retry").All()
	if len(retries) != 1 || !strings.Contains(fmt.Sprint(retries[0].ContextMap()["error"]), "begin transaction") {
		t.Fatalf("retries logged: %v, want one, of the BEGIN on the dead connection", retries)
	}
	if n := countRows(t, s, "SELECT count(*) FROM cursors"); n != 2 {
		t.Fatalf("%d cursor rows, want 2", n)
	}
}

// writerSession parks an operation of a batch after its INSERT and
// reports the server pid of the write connection, for the test to end
// that session under it. The operation's later runs do not park.
type writerSession struct {
	pid     chan int
	release chan struct{}
	runs    atomic.Int32
}

func newWriterSession() *writerSession {
	return &writerSession{pid: make(chan int, 1), release: make(chan struct{})}
}

// op inserts cursor name, parks on its first run, then runs then (nil:
// nothing more) before the batch commits.
func (w *writerSession) op(name string, then func(ctx context.Context, q querier) error) writeFunc {
	return func(ctx context.Context, q querier) error {
		if _, err := q.ExecContext(ctx, "INSERT INTO cursors (name, value, updated_at) VALUES (?, '1', 0)", name); err != nil {
			return err
		}
		if w.runs.Add(1) == 1 {
			var pid int
			if err := q.QueryRowContext(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
				return err
			}
			w.pid <- pid
			<-w.release
		}
		if then != nil {
			return then(ctx, q)
		}
		return nil
	}
}

// terminate ends server session pid from another connection and waits
// until the server has removed it.
func terminate(t *testing.T, dsn string, pid int) {
	t.Helper()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	// With a timeout, pg_terminate_backend waits until the session is gone.
	var ok bool
	if err := admin.QueryRow("SELECT pg_terminate_backend($1, 60000)", pid).Scan(&ok); err != nil || !ok {
		t.Fatalf("pg_terminate_backend(%d) = %v, %v: not gone within a minute", pid, ok, err)
	}
}

// The connection is dropped under an operation, before its batch reached
// COMMIT: the operation's next statement fails, nothing was applied, and
// the batch runs again on a new connection: one row, the caller told it
// succeeded.
func TestPostgresConnectionDroppedUnderOperation(t *testing.T) {
	t.Parallel()
	dsn := pgDatabase(t)
	s := openPG(t, dsn, Options{Cluster: ClusterOptions{Shared: true}})
	w := newWriterSession()
	o := submitAsync(t, s, w.op("dropped", func(ctx context.Context, q querier) error {
		_, err := q.ExecContext(ctx, "UPDATE cursors SET value = '2' WHERE name = 'dropped'")
		return err
	}))
	terminate(t, dsn, <-w.pid)
	close(w.release)
	if err := waitDone(t, o, "the operation"); err != nil {
		t.Fatalf("operation whose connection was dropped before COMMIT: %v", err)
	}
	if runs := w.runs.Load(); runs != 2 {
		t.Fatalf("operation ran %d times, want 2 (once more after the drop)", runs)
	}
	if v, _, err := s.Cursor(context.Background(), "dropped"); err != nil || v != "2" {
		t.Fatalf("cursor = %q, %v; want the rerun's 2", v, err)
	}
	if n := countRows(t, s, "SELECT count(*) FROM cursors"); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
}

// The connection is dropped after the operations ran, so the COMMIT is
// what fails: its outcome is read back (aborted: the server rolled the
// session's transaction back) and the batch runs again, once.
func TestPostgresConnectionDroppedBeforeCommit(t *testing.T) {
	t.Parallel()
	dsn := pgDatabase(t)
	log, logs, _ := loggedOnce("")
	s := openPG(t, dsn, Options{Logger: log, Cluster: ClusterOptions{Shared: true}})
	w := newWriterSession()
	o := submitAsync(t, s, w.op("before-commit", nil))
	terminate(t, dsn, <-w.pid)
	close(w.release)
	if err := waitDone(t, o, "the operation"); err != nil {
		t.Fatalf("operation whose COMMIT found the connection dropped: %v", err)
	}
	if runs := w.runs.Load(); runs != 2 {
		t.Fatalf("operation ran %d times, want 2", runs)
	}
	if n := countRows(t, s, "SELECT count(*) FROM cursors"); n != 1 {
		t.Fatalf("%d rows, want 1", n)
	}
	backs := logs.FilterMessage("store.commit_read_back").All()
	if len(backs) != 1 || backs[0].ContextMap()["committed"] != false {
		t.Fatalf("read-backs logged: %v, want one finding the batch not committed", backs)
	}
}

// commitCutter is a TCP proxy in front of the server that, once armed,
// forwards the next COMMIT and then drops the server's answer with both
// connections: the transaction is committed, and the client cannot know.
type commitCutter struct {
	ln     net.Listener
	target string
	armed  atomic.Bool
	cut    chan struct{} // closed once an answer was dropped
	once   sync.Once
}

func startCommitCutter(t *testing.T, target string) *commitCutter {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &commitCutter{ln: ln, target: target, cut: make(chan struct{})}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go p.pipe(c)
		}
	}()
	return p
}

func (p *commitCutter) pipe(client net.Conn) {
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		client.Close()
		return
	}
	defer server.Close()
	defer client.Close()
	var cutting atomic.Bool
	go func() {
		defer client.Close()
		buf := make([]byte, 32<<10)
		for {
			n, err := server.Read(buf)
			if n > 0 && cutting.Load() {
				// The client sends COMMIT only once it has every earlier
				// answer: these bytes are the COMMIT's.
				server.Close()
				p.once.Do(func() { close(p.cut) })
				return
			}
			if n > 0 {
				if _, err := client.Write(buf[:n]); err != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	r := bufio.NewReader(client)
	if err := forwardStartup(r, server); err != nil {
		return
	}
	for {
		msg, err := readMessage(r)
		if err != nil {
			return
		}
		if msg[0] == 'Q' && string(msg[5:]) == "COMMIT\x00" && p.armed.CompareAndSwap(true, false) {
			cutting.Store(true)
		}
		if _, err := server.Write(msg); err != nil {
			return
		}
	}
}

// forwardStartup forwards the untyped start-up message (length, then
// body); the client asks for no TLS (sslmode=disable).
func forwardStartup(r *bufio.Reader, w io.Writer) error {
	var n [4]byte
	if _, err := io.ReadFull(r, n[:]); err != nil {
		return err
	}
	body := make([]byte, binary.BigEndian.Uint32(n[:])-4)
	if _, err := io.ReadFull(r, body); err != nil {
		return err
	}
	_, err := w.Write(append(n[:], body...))
	return err
}

// readMessage reads one typed protocol message: type, length, body.
func readMessage(r *bufio.Reader) ([]byte, error) {
	head := make([]byte, 5)
	if _, err := io.ReadFull(r, head); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(head[1:])-4)
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return append(head, body...), nil
}

// A COMMIT that the server applied but whose answer was lost with the
// connection: retrying blindly would write the row twice, failing would
// tell the caller "not applied" of a row that is there. The store reads
// the transaction's status back on a new connection and answers the
// caller with success; the outbox, which has no unique key a retry could
// hit, holds one row.
func TestPostgresLostCommitAnswerIsReadBack(t *testing.T) {
	t.Parallel()
	srv := pgtest.Shared(t)
	direct := srv.NewDatabase(t)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	p := startCommitCutter(t, u.Host)
	u.Host = p.ln.Addr().String()
	log, logs, _ := loggedOnce("")
	s := openPG(t, u.String(), Options{Logger: log})
	ctx := context.Background()
	p.armed.Store(true)
	if _, err := s.Enqueue(ctx, OutboxMessage{SessionKey: "k", Platform: "api", ChatID: "c", Text: "once"}); err != nil {
		t.Fatalf("Enqueue whose COMMIT answer was lost: %v", err)
	}
	waitSignal(t, p.cut, "COMMIT answer dropped")
	if n := countRows(t, s, "SELECT count(*) FROM outbox WHERE text = 'once'"); n != 1 {
		t.Fatalf("%d outbox rows, want exactly 1", n)
	}
	backs := logs.FilterMessage("store.commit_read_back").All()
	if len(backs) != 1 || backs[0].ContextMap()["committed"] != true {
		t.Fatalf("read-backs logged: %v, want one finding the batch committed", backs)
	}
	if err := s.SetCursor(ctx, "after", "1"); err != nil {
		t.Fatalf("write after the read-back: %v", err)
	}
}

// holdSQLiteLock takes the database's write lock from another connection
// (a backup or the sqlite3 shell would) until the returned func is called.
func holdSQLiteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			if _, err := conn.ExecContext(context.Background(), "COMMIT"); err != nil {
				t.Error(err)
			}
			conn.Close()
			db.Close()
		})
	}
	t.Cleanup(release)
	return release
}

// busyStore opens a SQLite store that gives up on a held write lock after
// 10 ms (busy_timeout) instead of 5 s, so its retries show quickly.
func busyStore(t *testing.T, window time.Duration, log *zap.Logger) (*Store, string) {
	t.Helper()
	sqliteOnly(t, "SQLite's write lock")
	path := filepath.Join(t.TempDir(), "state.db")
	return openAt(t, path, Options{Logger: log, retryWindow: window,
		writePragmas: []string{"PRAGMA busy_timeout = 10"}}), path
}

func setCursorAsync(s *Store, ctx context.Context, name string) <-chan error {
	done := make(chan error, 1)
	go func() { done <- s.SetCursor(ctx, name, "1") }()
	return done
}

// SQLite's write lock held by another process past busy_timeout is the
// transient case there: BEGIN IMMEDIATE fails with SQLITE_BUSY, nothing
// was applied, and the batch runs again once the lock is free.
func TestSQLiteBusyWriteIsRetried(t *testing.T) {
	t.Parallel()
	log, _, retried := loggedOnce("store.write_retry")
	s, path := busyStore(t, 0, log)
	release := holdSQLiteLock(t, path)
	done := setCursorAsync(s, context.Background(), "busy")
	select {
	case err := <-done:
		t.Fatalf("write answered while another process held the lock: %v", err)
	case <-retried:
	}
	release()
	if err := <-done; err != nil {
		t.Fatalf("write after the lock was released: %v", err)
	}
	if _, found, err := s.Cursor(context.Background(), "busy"); err != nil || !found {
		t.Fatalf("cursor found %v, %v", found, err)
	}
}

// A lock held past the retry window is a lasting outage: the write fails
// (Transient, so a caller may keep its work for later), the next one fails
// at once instead of waiting the window again, and once the lock is free
// writes succeed. A caller whose context ends during the retries hears so
// and its write is never applied.
func TestSQLiteLastingBusyFailsThenRecovers(t *testing.T) {
	t.Parallel()
	s, path := busyStore(t, shortOutage, nil)
	release := holdSQLiteLock(t, path)
	err := s.SetCursor(context.Background(), "lost", "1")
	if err == nil || !Transient(err) {
		t.Fatalf("write with the lock held past the window: %v, want a transient failure", err)
	}
	start := time.Now()
	if err := s.SetCursor(context.Background(), "also lost", "1"); err == nil {
		t.Fatal("second write during the outage succeeded")
	}
	if waited := time.Since(start); waited >= shortOutage {
		t.Fatalf("second write during the outage waited %v, want it tried once", waited)
	}
	release()
	if err := s.SetCursor(context.Background(), "after", "1"); err != nil {
		t.Fatalf("write once the lock is free: %v", err)
	}
	for name, want := range map[string]bool{"lost": false, "also lost": false, "after": true} {
		if _, found, err := s.Cursor(context.Background(), name); err != nil || found != want {
			t.Errorf("cursor %q found %v (%v), want %v", name, found, err, want)
		}
	}
}

func TestSQLiteRetriedWriteHonoursItsContext(t *testing.T) {
	t.Parallel()
	log, _, retried := loggedOnce("store.write_retry")
	s, path := busyStore(t, 0, log)
	release := holdSQLiteLock(t, path)
	ctx, cancel := context.WithCancel(context.Background())
	done := setCursorAsync(s, ctx, "gave up")
	select {
	case err := <-done:
		t.Fatalf("write answered while another process held the lock: %v", err)
	case <-retried:
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("write whose caller gave up: %v, want context.Canceled", err)
	}
	release()
	if err := s.SetCursor(context.Background(), "after", "1"); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := s.Cursor(context.Background(), "gave up"); found {
		t.Fatal("the abandoned write was applied")
	}
}
