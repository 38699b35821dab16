package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"go.uber.org/zap"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/gatewayd/gatewayd/internal/backoff"
)

// Transient failures. A PostgreSQL restart or failover ends
// every session: the next statement on each connection fails although the
// server is back a moment later. SQLite's write lock may be held by
// another process (a backup, the sqlite3 shell) past busy_timeout. Such a
// failure is retried, not reported:
//
//   - a batch that failed before its COMMIT was sent (a failed BEGIN, a
//     connection dropped under an operation), or whose COMMIT the server
//     refused, was not applied: it runs again, whole, on a new connection;
//   - a COMMIT whose answer was lost with its connection may have been
//     applied or not. Its transaction id, taken in BEGIN's round trip, is
//     looked up on a new connection (pg_xact_status): the batch is
//     answered as committed, or run again, never applied twice;
//   - a read that failed on a dead pooled connection runs on another.
//
// Retries back off from retryFirst to retryMax and end retryWindow after
// the first failure (reads: readRetryWindow), or when the caller's context
// ends: only a lasting outage fails a write. Once one batch has failed so,
// the next ones are tried once each until the database answers again, so
// a long outage does not hold every caller for the whole window.
const (
	retryFirst = 20 * time.Millisecond
	retryMax   = time.Second
	// defaultRetryWindow is how long a write waits for the database to
	// come back: far longer than a restart (well under a second) or a
	// failover, short enough that a lost database is reported while the
	// caller is still there to hear it.
	defaultRetryWindow = 30 * time.Second
	// readRetryWindow bounds a read's wait: reads are answered to callers
	// that decide by them (a lane's owner, an API request) and would
	// rather hear of an outage soon.
	readRetryWindow = 5 * time.Second
)

// retryable reports whether err says the database is out of reach for now
// rather than that it refused the statement: the connection to PostgreSQL
// was lost or refused, the server is shutting down or starting, SQLite's
// write lock is held elsewhere. Whatever the open transaction had done
// was rolled back with it.
func retryable(err error) bool {
	if err == nil {
		return false
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		code := se.Code() & 0xff
		return code == sqlite3.SQLITE_BUSY || code == sqlite3.SQLITE_LOCKED
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "57P01", "57P02", "57P03", "53300": // admin_shutdown, crash_shutdown, cannot_connect_now, too_many_connections
			return true
		}
		return strings.HasPrefix(pe.Code, "08") // connection exception
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false // the caller's or the batch's time is up: a lasting outage
	}
	pgErr, ok := classifyPG(err)
	return ok && errors.Is(pgErr, ErrUnavailable)
}

// Transient reports whether err is a store failure that trying again later
// may cure with nothing applied meanwhile: the database out of reach
// (ErrUnavailable) or SQLite's write lock held by another process. The
// store has retried it already for as long as its retry window.
func Transient(err error) bool {
	return errors.Is(err, ErrUnavailable) || retryable(err)
}

// transient is retryable for an error of a statement run under ctx: once
// ctx has ended (the batch's deadline: a server that stopped answering)
// the failure is a lasting one.
func transient(ctx context.Context, err error) bool {
	return ctx.Err() == nil && retryable(err)
}

// retrier paces the attempts of one retried write or read.
type retrier struct {
	bo       *backoff.Backoff
	deadline time.Time
	attempts int
}

func newRetrier(window time.Duration) *retrier {
	return &retrier{bo: backoff.New(retryFirst, retryMax), deadline: time.Now().Add(window)}
}

// wait sleeps before the next attempt and reports false, at once, when
// that attempt would start past the deadline or ctx ends first.
func (r *retrier) wait(ctx context.Context) bool {
	d := r.bo.Next()
	if time.Now().Add(d).After(r.deadline) {
		return false
	}
	r.attempts++
	return backoff.Sleep(ctx, d)
}

// retryWindow is the writer's window: none once closing (Close must not
// wait out an outage) or while a lasting outage goes on.
func (s *Store) retryWindow() time.Duration {
	if s.outage || s.isClosed() {
		return 0
	}
	return s.writeRetryWindow
}

// answerGone fails, between two attempts, the operations whose callers
// have given up: nothing of them was applied, and they would only hold the
// batch.
func answerGone(batch []*op) []*op {
	live := batch[:0]
	for _, o := range batch {
		if o.ctx != nil && o.ctx.Err() != nil {
			o.done <- fmt.Errorf("store: submission not applied: %w", o.ctx.Err())
			continue
		}
		live = append(live, o)
	}
	return live
}

// begin opens the batch's transaction. On PostgreSQL the same round trip
// assigns it its transaction id, which settles a COMMIT whose answer was
// lost (readBack).
func (s *Store) begin(ctx context.Context) (xid string, err error) {
	if s.pg == nil {
		_, err := s.wq.ExecContext(ctx, s.d.begin)
		return "", err
	}
	s.wq.ran.Add(1)
	err = s.wconn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("store: unexpected driver connection %T", dc)
		}
		res, err := c.Conn().PgConn().Exec(ctx, "BEGIN; SELECT pg_current_xact_id()").ReadAll()
		if err != nil {
			return err
		}
		if len(res) != 2 || len(res[1].Rows) != 1 || len(res[1].Rows[0]) != 1 {
			return errors.New("store: BEGIN did not return the transaction id")
		}
		xid = string(res[1].Rows[0][0])
		return nil
	})
	return xid, err
}

// outcomeUnknown reports whether a failed COMMIT may have been applied:
// on PostgreSQL, unless the server answered with a refusal of its own (a
// deferred constraint, a serialization failure), which rolled it back.
func (s *Store) outcomeUnknown(err error) bool {
	if s.pg == nil {
		return false // SQLite's COMMIT is a local call: its error is the outcome
	}
	var pe *pgconn.PgError
	return !errors.As(err, &pe) || retryable(err)
}

// errInProgress: the transaction read back is still open in its old
// session, which has not yet noticed that its client is gone.
var errInProgress = errors.New("store: the transaction is still in progress in its old session")

// readBack settles a COMMIT whose answer was lost: on a new connection,
// pg_xact_status says whether transaction xid committed. While its old
// session still runs (the connection was cut on our side only) that
// session is ended, and the status asked again.
func (s *Store) readBack(xid string, old pgSession) (committed bool, err error) {
	// The whole window even while closing: an answer the store must not
	// guess.
	r := newRetrier(s.writeRetryWindow)
	for {
		var status string
		status, err = s.xactStatus(xid, old)
		switch {
		case err == nil && status == "committed":
			return true, nil
		case err == nil && status == "aborted":
			return false, nil
		case err == nil && status == "in progress":
			err = errInProgress
		case err == nil:
			return false, fmt.Errorf("store: transaction %s has no status (%q)", xid, status)
		case !retryable(err):
			return false, err
		}
		if !r.wait(context.Background()) {
			return false, err
		}
	}
}

func (s *Store) xactStatus(xid string, old pgSession) (string, error) {
	ctx, cancel := s.batchContext()
	defer cancel()
	if err := s.ensureWriter(ctx); err != nil {
		return "", err
	}
	var status sql.NullString
	if err := s.wq.QueryRowContext(ctx, "SELECT pg_xact_status(?::xid8)", xid).Scan(&status); err != nil {
		s.writerFailed(err)
		return "", classify(err)
	}
	if status.String == "in progress" {
		s.endSession(ctx, s.wq, old)
	}
	return status.String, nil
}

// endSession ends our own earlier write session old if the server still
// runs it (its connection was lost on our side only, and it holds its
// open transaction, or the ownership lock, until the server notices) and
// reports whether it did. The same pid and start time: that session, not
// a later one that got its pid after a restart.
func (s *Store) endSession(ctx context.Context, q querier, old pgSession) bool {
	if old.pid == 0 {
		return false
	}
	var ended bool
	err := q.QueryRowContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE pid = $1 AND backend_start = $2`, old.pid, old.started).Scan(&ended)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		s.log.Warn("store.end_old_session_failed", zap.Int("pid", old.pid), zap.Error(err))
		return false
	}
	if ended {
		s.log.Warn("store.old_session_ended", zap.Int("pid", old.pid))
	}
	return ended
}

// pgSession names a server session for pg_terminate_backend: its pid and
// start time (a pid is reused by later sessions).
type pgSession struct {
	pid     int
	started time.Time
}

// sessionOf reads the write connection's session, once per connection.
func sessionOf(ctx context.Context, conn *sql.Conn) pgSession {
	var s pgSession
	if err := conn.QueryRowContext(ctx, `SELECT pid, backend_start FROM pg_stat_activity
		WHERE pid = pg_backend_pid()`).Scan(&s.pid, &s.started); err != nil {
		return pgSession{} // then an old session is waited out, not ended
	}
	return s
}
