package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"runtime"
	"sync/atomic"
	"syscall"

	"go.uber.org/zap"
	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// querier is what operations and read helpers run SQL on: the worker's
// write connection inside a transaction, or the read pool.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// writeFunc is one submitted operation. It runs on the worker goroutine
// inside the current batch transaction, in a SAVEPOINT of its own when the
// batch has other operations. Results it computes
// are valid only once write returns nil (the batch committed).
type writeFunc func(ctx context.Context, q querier) error

const (
	opQueued int32 = iota
	opTaken
	opAbandoned
)

type op struct {
	fn   writeFunc
	done chan error // buffered: the worker never blocks on a caller
	// ctx is the caller's: an operation whose caller gave up is dropped
	// between two attempts of a retried batch (nil: never).
	ctx   context.Context
	state atomic.Int32
	// lazy: the caller needs the write to survive a crash of this process
	// at once, and a power cut only within lazySyncDelay (see writeLazy).
	lazy bool
}

// write submits fn and waits until its transaction committed. Any error
// means fn's effects are not in the database: either fn failed (its
// savepoint was rolled back), the batch failed to commit, or the caller's
// context ended before the worker took the operation.
func (s *Store) write(ctx context.Context, fn writeFunc) error {
	return s.submit(ctx, &op{fn: fn, done: make(chan error, 1), ctx: ctx})
}

// writeLazy is write for records whose loss in a power cut costs a repeat,
// not a loss: that a delivery was sent, a platform cursor. On SQLite a
// batch of only such operations commits without an fsync (synchronous =
// NORMAL: the commit is in the WAL, so it survives a crash of this process
// at once), and becomes durable with the next durable commit, which fsyncs
// the WAL with everything before it, or at the latest lazySyncDelay later.
// A power cut in between can roll it back: the delivery is sent again, the
// cursor re-reads what the inbox already holds. The writer stays one FIFO,
// so a lazy write never overtakes a durable one. On PostgreSQL it is write.
func (s *Store) writeLazy(ctx context.Context, fn writeFunc) error {
	return s.submit(ctx, &op{fn: fn, done: make(chan error, 1), ctx: ctx, lazy: true})
}

func (s *Store) submit(ctx context.Context, o *op) error {
	if err := s.enqueue(ctx, o); err != nil {
		return err
	}
	select {
	case err := <-o.done:
		return err
	case <-ctx.Done():
		if o.state.CompareAndSwap(opQueued, opAbandoned) {
			return fmt.Errorf("store: submission not applied: %w", ctx.Err())
		}
		// The worker already runs it; its batch decides the outcome soon.
		return <-o.done
	}
}

// enqueue blocks while the queue is full (back-pressure) until ctx ends.
// The read lock keeps Close from closing the queue under a pending send.
func (s *Store) enqueue(ctx context.Context, o *op) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return ErrClosed
	}
	select {
	case s.queue <- o:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("store: submission not queued: %w", ctx.Err())
	}
}

// run is the writer goroutine: it takes whatever is queued (up to
// MaxBatch), commits it as one transaction and acknowledges every caller.
// The queue is a single FIFO and batches run one after another, so the
// operations of one session key commit in submission order.
func (s *Store) run() {
	defer close(s.stopped)
	defer s.lazy.flush(s.log) // lazy commits still waiting for an fsync
	batch := make([]*op, 0, s.maxBatch)
	for {
		first, ok := s.next()
		if !ok {
			return
		}
		if len(batch) > 1 {
			// The last batch had concurrent submitters, woken by its
			// acknowledgements; let them queue their next operation so it
			// joins this batch instead of waiting a whole fsync for the next.
			runtime.Gosched()
		}
		batch = append(batch[:0], first)
	fill:
		for len(batch) < s.maxBatch {
			select {
			case o, ok := <-s.queue:
				if !ok {
					break fill
				}
				batch = append(batch, o)
			default:
				break fill
			}
		}
		s.commitBatch(takeLive(batch))
	}
}

// next waits for the next submission, syncing lazy commits when nothing
// durable has come to sync them within lazySyncDelay. False once the queue
// is closed and drained.
func (s *Store) next() (*op, bool) {
	for {
		due := s.lazy.due()
		if due == nil {
			o, ok := <-s.queue
			return o, ok
		}
		select {
		case o, ok := <-s.queue:
			return o, ok
		case <-due:
			s.lazy.flush(s.log)
		}
	}
}

func allLazy(batch []*op) bool {
	for _, o := range batch {
		if !o.lazy {
			return false
		}
	}
	return true
}

// takeLive drops operations whose caller gave up before the worker took them.
func takeLive(batch []*op) []*op {
	live := batch[:0]
	for _, o := range batch {
		if o.state.CompareAndSwap(opQueued, opTaken) {
			live = append(live, o)
		}
	}
	return live
}

// commitBatch commits the batch as one transaction and answers every
// operation. A transient failure that left nothing applied runs the batch
// again (transient.go) until it commits, fails for good, or the retry
// window ends; the operations whose callers gave up meanwhile are dropped.
func (s *Store) commitBatch(batch []*op) {
	if len(batch) == 0 {
		return
	}
	var r *retrier
	for {
		err := s.attempt(batch)
		if err == nil {
			if r != nil {
				s.log.Info("store.write_recovered", zap.Int("ops", len(batch)), zap.Int("retries", r.attempts))
			}
			s.outage = false
			return
		}
		if r == nil {
			r = newRetrier(s.retryWindow())
			s.log.Warn("store.write_retry", zap.Int("ops", len(batch)), zap.Error(err))
		}
		if s.isClosed() || !r.wait(context.Background()) {
			s.outage = s.writeRetryWindow > 0
			s.log.Error("store.write_failed", zap.Int("ops", len(batch)), zap.Int("retries", r.attempts), zap.Error(err))
			failAll(batch, err)
			return
		}
		if batch = answerGone(batch); len(batch) == 0 {
			return
		}
	}
}

// attempt runs the batch in one transaction and answers its operations,
// except after a transient failure with nothing applied: then it answers
// none and returns the failure, for commitBatch to run the batch again.
func (s *Store) attempt(batch []*op) error {
	ctx, cancel := s.batchContext()
	defer cancel()
	if err := s.ensureWriter(ctx); err != nil {
		return s.notApplied(ctx, batch, err)
	}
	durable := !allLazy(batch)
	if err := s.lazy.prepare(ctx, s.wq, durable); err != nil {
		s.writerFailed(err)
		return s.notApplied(ctx, batch, fmt.Errorf("store: set synchronous: %w", classify(err)))
	}
	xid, err := s.begin(ctx)
	if err != nil {
		s.writerFailed(err)
		s.rollback(ctx) // BEGIN may have opened the transaction its second statement failed in
		return s.notApplied(ctx, batch, fmt.Errorf("store: begin transaction: %w", classify(err)))
	}
	if len(batch) == 1 {
		return s.commitAlone(ctx, batch[0], xid)
	}
	results := make([]error, len(batch))
	for i, o := range batch {
		opErr, txErr := s.runOp(ctx, o)
		if transient(ctx, txErr) || transient(ctx, opErr) {
			// The transaction went with the connection (or the lock):
			// nothing of the batch is applied.
			s.writerFailed(errors.Join(txErr, opErr))
			s.rollback(ctx)
			return fmt.Errorf("store: operation not applied: %w", classify(errors.Join(txErr, opErr)))
		}
		if txErr != nil {
			s.writerFailed(txErr)
			s.abortOp(ctx, o, opErr, txErr)
			// The operations around the one that broke the transaction were
			// rolled back with it through no fault of their own: run them
			// again, in order, in a fresh transaction. Each round drops one
			// operation, so this ends.
			rest := make([]*op, 0, len(batch)-1)
			s.commitBatch(append(append(rest, batch[:i]...), batch[i+1:]...))
			return nil
		}
		results[i] = opErr
	}
	return s.commit(ctx, batch, results, xid, durable)
}

// notApplied answers a batch that failed before any of it was applied
// with err, unless err is transient: then it is returned, to run the batch
// again.
func (s *Store) notApplied(ctx context.Context, batch []*op, err error) error {
	if transient(ctx, err) {
		return err
	}
	failAll(batch, err)
	return nil
}

// commit commits the open transaction of the batch and answers each
// operation with its result (nil results: all succeeded). A COMMIT whose
// answer was lost is read back: committed, it is answered so; not, it is
// returned to be run again. One the database refused rolled back.
func (s *Store) commit(ctx context.Context, batch []*op, results []error, xid string, durable bool) error {
	_, err := s.wq.ExecContext(ctx, "COMMIT")
	if err != nil {
		s.writerFailed(err)
		cause := fmt.Errorf("store: commit of %d operations failed, none applied: %w", len(batch), classify(err))
		switch {
		case s.outcomeUnknown(err):
			applied, rerr := s.readBack(xid, s.pg.session)
			if rerr != nil {
				s.log.Error("store.commit_unknown", zap.Int("ops", len(batch)), zap.String("xid", xid), zap.Error(rerr))
				failAll(batch, fmt.Errorf("store: commit of %d operations: outcome unknown (the connection was lost and it could not be read back): %w",
					len(batch), classify(err)))
				return nil
			}
			s.log.Warn("store.commit_read_back", zap.Int("ops", len(batch)), zap.String("xid", xid),
				zap.Bool("committed", applied), zap.Error(err))
			if !applied {
				return cause
			}
		case transient(ctx, err):
			s.rollback(ctx)
			return cause
		default:
			s.rollback(ctx)
			s.log.Error("store.commit_failed", zap.Int("ops", len(batch)), zap.Error(err))
			failAll(batch, cause)
			return nil
		}
	}
	s.commits.Add(1)
	s.lazy.committed(durable)
	for i, o := range batch {
		if results == nil {
			o.done <- nil
			continue
		}
		o.done <- results[i]
	}
	return nil
}

// commitAlone finishes a batch of one operation, whose transaction is
// open, without the savepoint that isolates an operation from the others
// of its batch: when it fails, rolling back the transaction undoes only its
// own work. Two statements fewer per commit, and on a store that is not
// busy nearly every commit is of one operation.
func (s *Store) commitAlone(ctx context.Context, o *op, xid string) error {
	if opErr := callSafely(ctx, o.fn, s.wq); opErr != nil {
		// SQLite may have rolled back already (full disk): "no transaction
		// is active" is expected then.
		if _, err := s.wq.ExecContext(ctx, "ROLLBACK"); err != nil {
			s.writerFailed(err)
			s.log.Debug("store.rollback", zap.Error(err))
		}
		if transient(ctx, opErr) {
			s.writerFailed(opErr)
			return fmt.Errorf("store: operation not applied: %w", classify(opErr))
		}
		o.done <- classify(opErr)
		return nil
	}
	return s.commit(ctx, []*op{o}, nil, xid, !o.lazy)
}

// runOp runs one operation in its own savepoint. opErr is the operation's
// own failure (rolled back alone); txErr means the transaction itself is
// gone (SQLite rolls a whole transaction back on some I/O and full-disk
// errors), so nothing of the batch so far can be trusted.
func (s *Store) runOp(ctx context.Context, o *op) (opErr, txErr error) {
	if _, err := s.wq.ExecContext(ctx, "SAVEPOINT op"); err != nil {
		return nil, err
	}
	opErr = callSafely(ctx, o.fn, s.wq)
	if opErr == nil {
		if _, err := s.wq.ExecContext(ctx, "RELEASE op"); err != nil {
			return nil, err
		}
		return nil, nil
	}
	if _, err := s.wq.ExecContext(ctx, "ROLLBACK TO op"); err != nil {
		return classify(opErr), err
	}
	if _, err := s.wq.ExecContext(ctx, "RELEASE op"); err != nil {
		return classify(opErr), err
	}
	return classify(opErr), nil
}

// callSafely turns a panic in an operation into an error so one bad
// operation can never take the writer (and every caller) down.
func callSafely(ctx context.Context, fn writeFunc, q querier) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("store: operation panicked: %v", r)
		}
	}()
	return fn(ctx, q)
}

// abortOp fails the operation during which the transaction ended
// underneath us (SQLite rolled it back) and cleans up the connection.
func (s *Store) abortOp(ctx context.Context, o *op, opErr, txErr error) {
	s.rollback(ctx)
	cause := classify(txErr)
	if opErr != nil {
		cause = opErr
	}
	s.log.Error("store.transaction_aborted", zap.Error(cause))
	o.done <- fmt.Errorf("store: operation not applied: %w", cause)
}

// rollback ends whatever transaction may still be open; "no transaction is
// active" is expected when SQLite already rolled back.
func (s *Store) rollback(ctx context.Context) {
	if _, err := s.wq.ExecContext(ctx, "ROLLBACK"); err != nil {
		s.log.Debug("store.rollback", zap.Error(err))
	}
}

func failAll(ops []*op, err error) {
	for _, o := range ops {
		o.done <- err
	}
}

// classify adds the sentinel naming the cause to SQLite and OS errors that
// callers and operators must recognise (full disk, read-only, I/O). Other
// errors are returned unchanged.
func classify(err error) error {
	if err == nil || errors.Is(err, ErrDiskFull) || errors.Is(err, ErrReadOnly) || errors.Is(err, ErrIO) || errors.Is(err, ErrUnavailable) {
		return err
	}
	if pgErr, ok := classifyPG(err); ok {
		return pgErr
	}
	var se *sqlite.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_FULL:
			return fmt.Errorf("%w: %w", ErrDiskFull, err)
		case sqlite3.SQLITE_READONLY:
			return fmt.Errorf("%w: %w", ErrReadOnly, err)
		case sqlite3.SQLITE_IOERR:
			return fmt.Errorf("%w: %w", ErrIO, err)
		case sqlite3.SQLITE_CANTOPEN:
			return fmt.Errorf("store: cannot open database file (SQLITE_CANTOPEN): %w", err)
		}
		return err
	}
	return classifyOS(err)
}

func classifyOS(err error) error {
	switch {
	case errors.Is(err, syscall.ENOSPC):
		return fmt.Errorf("%w: %w", ErrDiskFull, err)
	case errors.Is(err, syscall.EROFS), errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%w: %w", ErrReadOnly, err)
	}
	return err
}
