// Package store keeps gatewayd's durable state in one SQLite database:
// the lane routing table (the Codex thread id of every lane), transcript
// sessions and messages with full-text search, the inbox, the outbox, the
// turn journal and platform cursors.
//
// Every write goes through one goroutine that owns the only write
// connection. Callers submit operations and are acknowledged only after the
// transaction holding their operation has been committed and synced.
// Concurrent submissions are group-committed into one transaction, each in
// its own SAVEPOINT, so one operation's error rolls back only that operation
// while a failed COMMIT fails every operation of the batch (nothing
// partial). Reads use a separate read-only pool, which WAL lets run beside
// the writer.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/zap"
	"modernc.org/sqlite" // also registers the "sqlite" driver
)

// Options tune a Store. Zero values pick the defaults.
type Options struct {
	Logger    *zap.Logger
	QueueSize int              // submissions waiting for the writer (default 1024)
	MaxBatch  int              // operations per group commit (default 256)
	Now       func() time.Time // clock for timestamps (default time.Now)
	ReadConns int              // read-only pool size (default 4)

	// Cluster mode (PostgreSQL only): see ClusterOptions.
	Cluster ClusterOptions

	// writePragmas are test hooks run on the write connection after the
	// migrations: max_page_count caps the file to force SQLITE_FULL,
	// query_only makes every submission fail as read-only.
	writePragmas []string
	// writeReadOnly opens the write connection with mode=ro, which is how a
	// test running as root (which ignores file permission bits) gets a
	// database that refuses writes.
	writeReadOnly bool
	// pgLockWait replaces pgLockWait (negative: try once), so tests of
	// the refusal need not wait for it.
	pgLockWait time.Duration
	// pgBatchTimeout replaces pgBatchTimeout, for benchmarks that load
	// millions of rows in one operation.
	pgBatchTimeout time.Duration
	// retryWindow replaces defaultRetryWindow (negative: no retries), so
	// tests of a lasting outage need not wait it out.
	retryWindow time.Duration
	// lazySyncDelay replaces defaultLazySyncDelay; lazySynced is called
	// after each fsync of lazy commits, so tests wait on it.
	lazySyncDelay time.Duration
	lazySynced    func()
}

const (
	defaultQueueSize = 1024
	defaultMaxBatch  = 256
	defaultReadConns = 4
	busyTimeoutMS    = 5000
)

// Store is the durable state of one gatewayd. Safe for concurrent use.
type Store struct {
	path string   // the database file, or the PostgreSQL server and database (never credentials)
	d    *dialect // the backend's SQL differences
	log  *zap.Logger
	now  func() time.Time

	lockFile *os.File
	writeDB  *sql.DB
	wconn    *sql.Conn  // owned by the worker goroutine once Open returns
	wq       *stmtCache // prepared statements on wconn, used only by the worker
	readDB   *sql.DB    // read-only pool
	rq       *stmtCache // prepared statements on readDB

	mu       sync.RWMutex // guards closed against sends on queue
	closed   bool
	queue    chan *op
	maxBatch int
	stopped  chan struct{}
	closeErr error
	once     sync.Once
	commits  atomic.Int64 // committed batches, for tests and Commits

	pg *pgState // PostgreSQL only: what reconnecting the writer needs

	// writeRetryWindow is how long a batch is retried after a transient
	// failure (transient.go); outage is set once one failed for good, and
	// cleared by the next batch the database answers. Both the worker's.
	writeRetryWindow time.Duration
	outage           bool

	lazy lazySync // SQLite only: commits of writeLazy waiting for an fsync
}

// Driver is the backend: "sqlite" or "postgres" (store.driver).
func (s *Store) Driver() string { return s.d.name }

// Open opens (creating if needed) the database at path, takes the exclusive
// ownership lock, applies pending migrations and starts the writer.
func Open(ctx context.Context, path string, opts Options) (*Store, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", path, err)
	}
	s := &Store{path: abs, d: sqliteDialect, log: opts.Logger, now: opts.Now, stopped: make(chan struct{})}
	s.applyDefaults(opts)
	useFdatasync(s.log)
	if s.lockFile, err = lockDatabase(abs); err != nil {
		return nil, err
	}
	if err := s.openConnections(ctx, opts); err != nil {
		return nil, errors.Join(err, s.closeConnections())
	}
	s.lazy = newLazySync(abs, opts.lazySyncDelay, opts.lazySynced)
	go s.run()
	s.log.Info("store.opened", zap.String("path", abs), zap.Int("schema_version", len(migrations)))
	return s, nil
}

func (s *Store) applyDefaults(opts Options) {
	if s.log == nil {
		s.log = zap.NewNop()
	}
	if s.now == nil {
		s.now = time.Now
	}
	size := opts.QueueSize
	if size <= 0 {
		size = defaultQueueSize
	}
	s.queue = make(chan *op, size)
	s.maxBatch = opts.MaxBatch
	if s.maxBatch <= 0 {
		s.maxBatch = defaultMaxBatch
	}
	s.writeRetryWindow = defaultRetryWindow
	if opts.retryWindow != 0 {
		s.writeRetryWindow = max(opts.retryWindow, 0)
	}
}

// lockDatabase takes an exclusive, non-blocking flock on "<path>.lock" for
// the life of the Store. SQLite's own locks only serialise transactions; two
// gatewayds on one database would both run and fight over every lane, so the
// second must fail at start with a clear message, not with "database is
// locked" somewhere later. The kernel drops the lock when the process dies,
// so a crash never leaves a stale lock behind.
func lockDatabase(path string) (*os.File, error) {
	lockPath := path + ".lock"
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("store: open lock file %s: %w", lockPath, classifyOS(err))
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder := readLockHolder(f)
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked by %s (lock file %s); another gatewayd is already running with this database",
				ErrLocked, path, holder, lockPath)
		}
		return nil, fmt.Errorf("store: lock %s: %w", lockPath, err)
	}
	// Record our pid so the next process's error can name the owner.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

func readLockHolder(f *os.File) string {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	if pid := strings.TrimSpace(string(buf[:n])); pid != "" {
		return "pid " + pid
	}
	return "another process"
}

// Pragmas of the write connection, and why:
//
//   - journal_mode=WAL: readers never block the writer nor the writer the
//     readers, and a commit is one append to the WAL, which is what makes
//     group commit cheap.
//   - synchronous=FULL: every COMMIT fsyncs the WAL before it returns, so an
//     acknowledged write survives power loss and OS crashes. NORMAL only
//     syncs the WAL at checkpoints: a commit acknowledged under NORMAL stays
//     safe across a process crash but can be rolled back by a power cut, and
//     the promise here is "acknowledged = durable" (a thread id we told the
//     user about must never vanish). Group commit pays for the fsync. The
//     exception is writeLazy's records (a delivery sent, a cursor), whose
//     loss costs a repeat: a batch of only those commits under NORMAL and
//     is synced by the next durable commit or lazySyncDelay later.
//   - busy_timeout=5000: the read pool and the checkpointer can briefly hold
//     locks; wait for them rather than failing with SQLITE_BUSY.
//   - foreign_keys=ON: SQLite leaves it off by default per connection; the
//     schema's references are meant to be enforced.
var writePragmas = []string{
	"PRAGMA busy_timeout = " + strconv.Itoa(busyTimeoutMS),
	"PRAGMA foreign_keys = ON",
	"PRAGMA synchronous = FULL",
}

func (s *Store) openConnections(ctx context.Context, opts Options) error {
	mode := "rwc"
	if opts.writeReadOnly {
		mode = "ro"
	}
	var err error
	if s.writeDB, err = sql.Open("sqlite", fileURI(s.path, mode)); err != nil {
		return fmt.Errorf("store: open %s: %w", s.path, err)
	}
	s.writeDB.SetMaxOpenConns(1)
	if s.wconn, err = s.writeDB.Conn(ctx); err != nil {
		return fmt.Errorf("store: open %s: %w", s.path, classify(err))
	}
	if err := s.configureWriter(ctx); err != nil {
		return err
	}
	// migrate always takes the write lock, even with nothing to apply: a
	// database that cannot be written fails Open with ErrReadOnly here
	// instead of failing the first submission later.
	if err := migrate(ctx, s.wconn, len(migrations)); err != nil {
		return fmt.Errorf("store: migrate %s: %w", s.path, classify(err))
	}
	for _, p := range opts.writePragmas {
		if _, err := s.wconn.ExecContext(ctx, p); err != nil {
			return fmt.Errorf("store: %s on %s: %w", p, s.path, classify(err))
		}
	}
	s.wq = newStmtCache(s.wconn, s.d)
	return s.openReadPool(ctx, opts)
}

func (s *Store) configureWriter(ctx context.Context) error {
	var journal string
	if err := s.wconn.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&journal); err != nil {
		return fmt.Errorf("store: set WAL on %s: %w", s.path, classify(err))
	}
	if !strings.EqualFold(journal, "wal") {
		return fmt.Errorf("store: %s: journal_mode is %q, WAL is required (file system without shared memory?)", s.path, journal)
	}
	for _, p := range writePragmas {
		if _, err := s.wconn.ExecContext(ctx, p); err != nil {
			return fmt.Errorf("store: %s on %s: %w", p, s.path, classify(err))
		}
	}
	return nil
}

// openReadPool opens the read connections with mode=ro and query_only, so a
// bug can never route a write around the worker.
func (s *Store) openReadPool(ctx context.Context, opts Options) error {
	n := opts.ReadConns
	if n <= 0 {
		n = defaultReadConns
	}
	dsn := fileURI(s.path, "ro") + "&_pragma=busy_timeout(" + strconv.Itoa(busyTimeoutMS) + ")&_pragma=query_only(1)"
	var err error
	if s.readDB, err = sql.Open("sqlite", dsn); err != nil {
		return fmt.Errorf("store: open read pool %s: %w", s.path, err)
	}
	s.readDB.SetMaxOpenConns(n)
	s.readDB.SetMaxIdleConns(n)
	if err := s.readDB.PingContext(ctx); err != nil {
		return fmt.Errorf("store: open read pool %s: %w", s.path, classify(err))
	}
	s.rq = newStmtCache(s.readDB, s.d)
	return nil
}

// useFdatasync makes SQLite commit with fdatasync(2) instead of fsync(2).
// Both put the WAL's data and its size on stable storage before COMMIT
// returns, so durability is unchanged; fdatasync skips the timestamp update
// that costs ext4 a journal commit, roughly halving commit latency. Native
// SQLite builds on Linux already use it; the transpiled driver defaults to
// fsync and exposes the choice as a process-wide switch. Where fdatasync
// does not exist the driver keeps fsync.
func useFdatasync(log *zap.Logger) {
	if _, err := sqlite.Fdatasync(true); err != nil {
		log.Debug("store.fdatasync_unavailable", zap.Error(err))
	}
}

// shortRead detaches an indexed read of a few rows on SQLite, the kind
// every message makes (its lane, the due outbox), from its caller's
// cancellation: under a cancellable context each statement starts two
// goroutines (database/sql's watcher of its rows and the driver's
// interrupter) and runs a progress callback, about 6 µs of a 20 µs read,
// to be able to stop a read that takes microseconds. On PostgreSQL, over
// the network, reads keep their caller's context.
func (s *Store) shortRead(ctx context.Context) context.Context {
	if s.pg != nil {
		return ctx
	}
	return context.WithoutCancel(ctx)
}

func fileURI(path, mode string) string {
	u := url.URL{Scheme: "file", Path: path, RawQuery: "mode=" + mode}
	return u.String()
}

// Close stops accepting submissions, waits until everything already
// submitted is committed (or failed), then closes the database and releases
// the ownership lock. Safe to call more than once.
func (s *Store) Close() error {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		close(s.queue)
		s.mu.Unlock()
		<-s.stopped
		s.closeErr = s.closeConnections()
		s.log.Info("store.closed", zap.String("path", s.path))
	})
	return s.closeErr
}

func (s *Store) closeConnections() error {
	var errs []error
	s.releasePGLock()
	if s.rq != nil {
		errs = append(errs, s.rq.Close())
	}
	if s.wq != nil {
		errs = append(errs, s.wq.Close())
	}
	if s.readDB != nil {
		errs = append(errs, s.readDB.Close())
	}
	if s.wconn != nil {
		// ErrConnDone: a lost PostgreSQL connection was already discarded.
		if err := s.wconn.Close(); !errors.Is(err, sql.ErrConnDone) {
			errs = append(errs, err)
		}
	}
	if s.writeDB != nil {
		errs = append(errs, s.writeDB.Close())
	}
	if s.lockFile != nil {
		// Unlock before closing: a child forked at this moment (codex, a
		// command) shares the lock's open file description until it execs,
		// and closing our fd alone would leave the database locked for
		// that while, so an immediate reopen would be refused.
		_ = syscall.Flock(int(s.lockFile.Fd()), syscall.LOCK_UN)
		errs = append(errs, s.lockFile.Close())
	}

	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("store: close %s: %w", s.path, err)
	}
	return nil
}

// Ping checks that the database answers a read on the read pool and that
// the writer goroutine is alive and can take the write lock (an empty
// operation goes through the queue; committing it writes nothing).
func (s *Store) Ping(ctx context.Context) error {
	var one int
	err := s.rq.QueryRowContext(ctx, "SELECT 1 FROM gateway_routing LIMIT 1").Scan(&one)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		if s.isClosed() {
			return ErrClosed
		}
		return fmt.Errorf("store: ping %s: %w", s.path, classify(err))
	}
	if err := s.write(ctx, func(context.Context, querier) error { return nil }); err != nil {
		return fmt.Errorf("store: ping writer of %s: %w", s.path, err)
	}
	return nil
}

func (s *Store) isClosed() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.closed
}

// QueueDepth is the number of submissions waiting for the writer.
func (s *Store) QueueDepth() int { return len(s.queue) }

// Commits is the number of batch transactions committed so far; with
// QueueDepth it shows how well group commit is batching.
func (s *Store) Commits() int64 { return s.commits.Load() }

// Statements is the number of SQL statements run so far, reads and writes,
// transaction control included: with Commits, what a message costs the
// database (benchmarks report it per message).
func (s *Store) Statements() int64 {
	var n int64
	for _, c := range []*stmtCache{s.wq, s.rq} {
		if c != nil {
			n += c.ran.Load()
		}
	}
	return n
}

// Path is the absolute path of the database file; on PostgreSQL the
// server and database, host:port/db, without credentials.
func (s *Store) Path() string { return s.path }
