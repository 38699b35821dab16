package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/zap"
)

// ErrUnavailable marks a write or read that failed because the PostgreSQL
// server could not be reached or the connection to it was lost. The store
// reconnects by itself; the caller may retry later.
var ErrUnavailable = errors.New("store: database server unavailable")

const (
	// pgConnectTimeout bounds each connection attempt when the DSN sets no
	// connect_timeout: a server that does not answer must fail submitters,
	// not hang them.
	pgConnectTimeout = 10 * time.Second
	// pgBatchTimeout bounds one batch transaction on PostgreSQL, for the
	// same reason: a connection that stops answering without closing (a
	// lost network) is cut and its submitters get an error.
	pgBatchTimeout = 30 * time.Second
	// pgLockWait is how long Open waits for a held ownership lock, and
	// pgLockRetry how often it asks again.
	pgLockWait  = 5 * time.Second
	pgLockRetry = 100 * time.Millisecond
)

// The advisory lock that makes one gatewayd the owner of a database
// ("gate", "wayd"). Advisory locks are scoped to the database, so two
// gatewayds on different databases of one server do not collide. This is
// the single-node rule, as the lock file is for SQLite; several nodes on
// one database will own lanes by lease instead (cluster step).
const (
	pgLockClass = 0x67617465
	pgLockID    = 0x77617964
	// pgMigrateLockID serialises migrations ("migr"), held per transaction.
	pgMigrateLockID = 0x6d696772
)

// pgState is what the PostgreSQL writer needs to reconnect. Only the worker
// goroutine touches it once Open returns.
type pgState struct {
	broken       bool          // the write connection failed; get a new one before the next batch
	lockWait     time.Duration // how long a held ownership lock is retried
	batchTimeout time.Duration
	cluster      ClusterOptions // several nodes share the database: no ownership lock, fenced lane writes
	session      pgSession      // the write connection's server session, to end it if it outlives the connection
}

// releasePGLock lets go of the ownership lock before the connection
// closes: the server drops a closed session's locks only once its backend
// has exited, which a quick restart of the daemon could otherwise race.
func (s *Store) releasePGLock() {
	if s.pg == nil || s.pg.broken || s.wconn == nil || s.pg.cluster.Shared {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), pgConnectTimeout)
	defer cancel()
	if _, err := s.wconn.ExecContext(ctx, "SELECT pg_advisory_unlock($1, $2)", pgLockClass, pgLockID); err != nil {
		s.log.Debug("store.unlock", zap.Error(err))
	}
}

// OpenPostgres opens the store on the PostgreSQL database named by dsn
// (a libpq URL or key=value string), takes the ownership lock, applies
// pending migrations and starts the writer. The DSN may carry a password:
// it never appears in errors or logs, which name the database as
// host:port/db.
func OpenPostgres(ctx context.Context, dsn string, opts Options) (*Store, error) {
	cfg, err := parsePGConfig(dsn)
	if err != nil {
		return nil, err
	}
	s := &Store{path: pgWhere(cfg), d: pgDialect, log: opts.Logger, now: opts.Now,
		stopped: make(chan struct{}), pg: &pgState{lockWait: pgLockWait, batchTimeout: pgBatchTimeout}}
	if opts.pgBatchTimeout > 0 {
		s.pg.batchTimeout = opts.pgBatchTimeout
	}
	s.pg.cluster = opts.Cluster
	if opts.pgLockWait != 0 {
		s.pg.lockWait = max(opts.pgLockWait, 0)
	}
	s.applyDefaults(opts)
	if err := s.openPG(ctx, cfg, opts); err != nil {
		return nil, errors.Join(err, s.closeConnections())
	}
	go s.run()
	s.log.Info("store.opened", zap.String("driver", "postgres"), zap.String("database", s.path),
		zap.Int("schema_version", len(pgMigrations)))
	return s, nil
}

// parsePGConfig parses dsn without ever echoing it: pgx's parse errors
// quote the string they could not parse.
func parsePGConfig(dsn string) (*pgx.ConnConfig, error) {
	if dsn == "" {
		return nil, fmt.Errorf("%w: empty PostgreSQL DSN", ErrInvalid)
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		var pe *pgconn.ParseConfigError
		if errors.As(err, &pe) && pe.Unwrap() != nil {
			err = pe.Unwrap()
		} else {
			err = errors.New("malformed; expected postgres://user:password@host:port/db or key=value pairs")
		}
		return nil, fmt.Errorf("%w: PostgreSQL DSN: %v", ErrInvalid, err)
	}
	if cfg.ConnectTimeout == 0 {
		cfg.ConnectTimeout = pgConnectTimeout
	}
	if _, ok := cfg.RuntimeParams["application_name"]; !ok {
		// Lets the lock holder's error (and pg_stat_activity) name us.
		host, _ := os.Hostname()
		cfg.RuntimeParams["application_name"] = truncate("gatewayd pid "+strconv.Itoa(os.Getpid())+" on "+host, 63)
	}
	return cfg, nil
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

// pgWhere names the database for messages: host:port/db, no user, no
// password.
func pgWhere(cfg *pgx.ConnConfig) string {
	return fmt.Sprintf("%s:%d/%s", cfg.Host, cfg.Port, cfg.Database)
}

func (s *Store) openPG(ctx context.Context, cfg *pgx.ConnConfig, opts Options) error {
	s.writeDB = stdlib.OpenDB(*cfg)
	s.writeDB.SetMaxOpenConns(1)
	s.writeDB.SetMaxIdleConns(1)
	conn, err := s.connectWriter(ctx, s.pg.lockWait, pgSession{})
	if err != nil {
		return err
	}
	s.wconn = conn
	if err := migratePG(ctx, conn); err != nil {
		return fmt.Errorf("store: migrate %s: %w", s.path, classify(err))
	}
	s.wq = newStmtCache(s.wconn, s.d)
	return s.openPGReadPool(ctx, cfg, opts)
}

// connectWriter takes a connection for the writer and the ownership lock
// on it. The lock lives on the write connection itself: it goes when that
// connection goes, and no batch runs on a connection that does not hold it.
// old is the write session this one replaces, ended if it still holds the
// lock.
func (s *Store) connectWriter(ctx context.Context, lockWait time.Duration, old pgSession) (*sql.Conn, error) {
	conn, err := s.writeDB.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("store: connect to %s: %w", s.path, classify(err))
	}
	s.pg.session = sessionOf(ctx, conn)
	if s.pg.cluster.Shared {
		return conn, nil // lane leases, not one lock, say who writes what
	}
	if err := s.takePGLock(ctx, conn, lockWait, old); err != nil {
		discardConn(conn)
		return nil, err
	}
	return conn, nil
}

// takePGLock tries the ownership lock until wait has passed. The
// wait covers a predecessor killed a moment ago: the server drops its
// session's lock only once it has noticed the closed socket. Our own old
// session, if it still holds the lock, is ended and waited for.
func (s *Store) takePGLock(ctx context.Context, conn *sql.Conn, wait time.Duration, old pgSession) error {
	deadline := time.Now().Add(wait)
	for {
		var got bool
		if err := conn.QueryRowContext(ctx, "SELECT pg_try_advisory_lock($1, $2)", pgLockClass, pgLockID).Scan(&got); err != nil {
			return fmt.Errorf("store: lock %s: %w", s.path, classify(err))
		}
		if got {
			return nil
		}
		if s.endSession(ctx, conn, old) {
			old, deadline = pgSession{}, time.Now().Add(pgLockWait)
			continue
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%w: %s is locked by %s; another gatewayd is already running with this database",
				ErrLocked, s.path, pgLockHolder(ctx, conn))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("store: lock %s: %w", s.path, ctx.Err())
		case <-time.After(pgLockRetry):
		}
	}
}

// pgLockHolder names the session holding the ownership lock, for the error.
func pgLockHolder(ctx context.Context, conn *sql.Conn) string {
	var pid int
	var app, addr string
	err := conn.QueryRowContext(ctx, `SELECT a.pid, a.application_name, coalesce(host(a.client_addr), 'local socket')
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 2
		AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) LIMIT 1`,
		pgLockClass, pgLockID).Scan(&pid, &app, &addr)
	if err != nil {
		return "another session"
	}
	return fmt.Sprintf("server process %d (%q from %s)", pid, app, addr)
}

// discardConn closes conn's driver connection instead of returning it to
// the pool: it may be broken, or hold the lock we mean to let go.
func discardConn(conn *sql.Conn) {
	_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = conn.Close()
}

// openPGReadPool opens the read pool with default_transaction_read_only,
// so a bug can never route a write around the worker (SQLite's query_only).
func (s *Store) openPGReadPool(ctx context.Context, cfg *pgx.ConnConfig, opts Options) error {
	n := opts.ReadConns
	if n <= 0 {
		n = defaultReadConns
	}
	rcfg := cfg.Copy()
	rcfg.RuntimeParams["default_transaction_read_only"] = "on"
	s.readDB = stdlib.OpenDB(*rcfg)
	s.readDB.SetMaxOpenConns(n)
	s.readDB.SetMaxIdleConns(n)
	if err := s.readDB.PingContext(ctx); err != nil {
		return fmt.Errorf("store: open read pool %s: %w", s.path, classify(err))
	}
	s.rq = newStmtCache(s.readDB, s.d)
	s.rq.retryReads, s.rq.poolSize, s.rq.retryWindow = true, n, min(readRetryWindow, s.writeRetryWindow)
	return nil
}

// batchContext is the context a batch runs under: never the caller's (a
// cancellation must not cut a batch in half), bounded on PostgreSQL.
func (s *Store) batchContext() (context.Context, context.CancelFunc) {
	if s.pg == nil {
		return context.Background(), func() {}
	}
	return context.WithTimeout(context.Background(), s.pg.batchTimeout)
}

// writerFailed notes that a transaction-level statement failed. On
// PostgreSQL that is nearly always a lost connection; the next batch starts
// on a new one (SQLite's single file connection does not go away).
func (s *Store) writerFailed(err error) {
	if s.pg == nil || err == nil {
		return
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && !errors.Is(classify(err), ErrUnavailable) {
		return // the server refused a statement; the session itself is fine
	}
	s.pg.broken = true
	s.log.Warn("store.connection_lost", zap.String("database", s.path), zap.Error(err))
}

// ensureWriter replaces a failed write connection before a batch, taking
// the ownership lock again (the server dropped it with the old session).
func (s *Store) ensureWriter(ctx context.Context) error {
	if s.pg == nil || !s.pg.broken {
		return nil
	}
	if s.wq != nil {
		_ = s.wq.Close()
	}
	discardConn(s.wconn)
	// No wait for the lock here: after a server restart nobody holds it
	// but a new owner (or our old session, which is ended), and waiting
	// would only hold the submitters.
	conn, err := s.connectWriter(ctx, 0, s.pg.session)
	if err != nil {
		// s.wconn stays the discarded one: every use fails until we reconnect.
		return fmt.Errorf("store: write not applied: %w", err)
	}
	s.wconn, s.wq = conn, newStmtCache(conn, s.d)
	s.pg.broken = false
	s.log.Info("store.reconnected", zap.String("database", s.path))
	return nil
}

// classifyPG adds the store's sentinels to PostgreSQL errors.
func classifyPG(err error) (error, bool) {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch {
		case pe.Code == fencedCode:
			return fmt.Errorf("%w: %w", ErrFenced, err), true
		case pe.Code == "53100": // disk_full
			return fmt.Errorf("%w: %w", ErrDiskFull, err), true
		case pe.Code == "25006": // read_only_sql_transaction
			return fmt.Errorf("%w: %w", ErrReadOnly, err), true
		case pe.Code == "58030": // io_error
			return fmt.Errorf("%w: %w", ErrIO, err), true
		case pe.Code[:2] == "08", pe.Code[:2] == "57": // connection exception, operator intervention (shutdown)
			return fmt.Errorf("%w: %w", ErrUnavailable, err), true
		}
		return err, true
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	// pgconn reports a dropped socket as a wrapped net error or EOF, and a
	// use after it noticed as "conn closed" (safe to retry).
	if errors.As(err, &ce) || errors.As(err, &ne) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) || pgconn.SafeToRetry(err) {
		return fmt.Errorf("%w: %w", ErrUnavailable, err), true
	}
	return err, false
}
