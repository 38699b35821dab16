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
	fn    writeFunc
	done  chan error // buffered: the worker never blocks on a caller
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
	return s.submit(ctx, &op{fn: fn, done: make(chan error, 1)})
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
	return s.submit(ctx, &op{fn: fn, done: make(chan error, 1), lazy: true})
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

func (s *Store) commitBatch(batch []*op) {
	if len(batch) == 0 {
		return
	}
	ctx, cancel := s.batchContext()
	defer cancel()
	if err := s.ensureWriter(ctx); err != nil {
		failAll(batch, err)
		return
	}
	durable := !allLazy(batch)
	if err := s.lazy.prepare(ctx, s.wq, durable); err != nil {
		s.writerFailed(err)
		failAll(batch, fmt.Errorf("store: set synchronous: %w", classify(err)))
		return
	}
	if _, err := s.wq.ExecContext(ctx, s.d.begin); err != nil {
		s.writerFailed(err)
		failAll(batch, fmt.Errorf("store: begin transaction: %w", classify(err)))
		return
	}
	if len(batch) == 1 {
		s.commitAlone(ctx, batch[0])
		return
	}
	results := make([]error, len(batch))
	for i, o := range batch {
		opErr, txErr := s.runOp(ctx, o)
		if txErr != nil {
			s.writerFailed(txErr)
			s.abortOp(ctx, o, opErr, txErr)
			// The operations around the one that broke the transaction were
			// rolled back with it through no fault of their own: run them
			// again, in order, in a fresh transaction. Each round drops one
			// operation, so this ends.
			rest := make([]*op, 0, len(batch)-1)
			s.commitBatch(append(append(rest, batch[:i]...), batch[i+1:]...))
			return
		}
		results[i] = opErr
	}
	if _, err := s.wq.ExecContext(ctx, "COMMIT"); err != nil {
		s.writerFailed(err)
		s.rollback(ctx)
		cause := fmt.Errorf("store: commit of %d operations failed, none applied: %w", len(batch), classify(err))
		s.log.Error("store.commit_failed", zap.Int("ops", len(batch)), zap.Error(err))
		failAll(batch, cause)
		return
	}
	s.commits.Add(1)
	s.lazy.committed(durable)
	for i, o := range batch {
		o.done <- results[i]
	}
}

// commitAlone finishes a batch of one operation, whose transaction is
// open, without the savepoint that isolates an operation from the others
// of its batch: when it fails, rolling back the transaction undoes only its
// own work. Two statements fewer per commit, and on a store that is not
// busy nearly every commit is of one operation.
func (s *Store) commitAlone(ctx context.Context, o *op) {
	if opErr := callSafely(ctx, o.fn, s.wq); opErr != nil {
		// SQLite may have rolled back already (full disk): "no transaction
		// is active" is expected then.
		if _, err := s.wq.ExecContext(ctx, "ROLLBACK"); err != nil {
			s.writerFailed(err)
			s.log.Debug("store.rollback", zap.Error(err))
		}
		o.done <- classify(opErr)
		return
	}
	if _, err := s.wq.ExecContext(ctx, "COMMIT"); err != nil {
		s.writerFailed(err)
		s.rollback(ctx)
		s.log.Error("store.commit_failed", zap.Int("ops", 1), zap.Error(err))
		o.done <- fmt.Errorf("store: commit of 1 operations failed, none applied: %w", classify(err))
		return
	}
	s.commits.Add(1)
	s.lazy.committed(!o.lazy)
	o.done <- nil
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
