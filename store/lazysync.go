package store

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

	"go.uber.org/zap"
)

// defaultLazySyncDelay bounds how long a lazy commit (writeLazy) can wait
// for an fsync when no durable commit comes to sync it: the window in
// which a power cut can undo it.
const defaultLazySyncDelay = time.Second

// lazySync is the writer's bookkeeping for lazy commits on SQLite: the
// write connection's synchronous setting, and whether commits in the WAL
// still wait for an fsync. Only the worker goroutine touches it. The zero
// value (PostgreSQL) makes every commit durable.
type lazySync struct {
	enabled  bool
	walPath  string
	delay    time.Duration
	normal   bool // the write connection runs synchronous = NORMAL
	unsynced bool // lazy commits since the last fsync of the WAL
	timer    *time.Timer
	synced   func() // test hook: a flush ran
}

func newLazySync(dbPath string, delay time.Duration, synced func()) lazySync {
	if delay <= 0 {
		delay = defaultLazySyncDelay
	}
	t := time.NewTimer(delay)
	t.Stop()
	return lazySync{enabled: true, walPath: dbPath + "-wal", delay: delay, timer: t, synced: synced}
}

// prepare sets the write connection's synchronous mode for the batch about
// to begin: FULL (COMMIT fsyncs the WAL) when any of its operations is
// durable, NORMAL when all are lazy. A pragma only when the mode changes.
func (l *lazySync) prepare(ctx context.Context, q querier, durable bool) error {
	if !l.enabled || durable != l.normal {
		return nil
	}
	pragma := "PRAGMA synchronous = FULL"
	if !durable {
		pragma = "PRAGMA synchronous = NORMAL"
	}
	if _, err := q.ExecContext(ctx, pragma); err != nil {
		return err
	}
	l.normal = !durable
	return nil
}

// committed records a batch's commit. A durable commit fsynced the WAL,
// and so every lazy commit before it: nothing waits any more.
func (l *lazySync) committed(durable bool) {
	switch {
	case !l.enabled:
	case durable:
		l.unsynced = false
		l.timer.Stop()
	case !l.unsynced:
		l.unsynced = true
		l.timer.Reset(l.delay)
	}
}

// due fires when lazy commits have waited lazySyncDelay; nil while none wait.
func (l *lazySync) due() <-chan time.Time {
	if !l.unsynced {
		return nil
	}
	return l.timer.C
}

// flush fsyncs the WAL, which makes every commit in it durable. The file
// is opened afresh: a few syscalls once a delay at most, and it is always
// the WAL SQLite writes now (it keeps it while the write connection is
// open). A WAL that is gone was checkpointed into the database, which the
// checkpoint synced.
func (l *lazySync) flush(log *zap.Logger) {
	if !l.unsynced {
		return
	}
	l.unsynced = false
	l.timer.Stop()
	if err := syncFile(l.walPath); err != nil {
		// Not fatal: the next durable commit fsyncs the WAL again.
		log.Error("store.lazy_sync_failed", zap.String("wal", l.walPath), zap.Error(err))
	}
	if l.synced != nil {
		l.synced()
	}
}

func syncFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = f.Sync()
	return errors.Join(err, f.Close())
}
