package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// Size is how much disk the database takes: the main file and its
// write-ahead log (which holds recent commits until a checkpoint, so the
// main file alone understates a busy store).
type Size struct {
	DatabaseBytes int64
	WALBytes      int64 // 0 when there is no -wal file
}

// Total is the database file and its WAL together.
func (z Size) Total() int64 { return z.DatabaseBytes + z.WALBytes }

// Size reports the database's size on disk, for the console's status page.
// On PostgreSQL it is the server's figure for this database (WAL is the
// server's, shared by every database, so it is not counted).
func (s *Store) Size(ctx context.Context) (Size, error) {
	if s.d == pgDialect {
		var n int64
		if err := s.rq.QueryRowContext(ctx, `SELECT pg_database_size(current_database())`).Scan(&n); err != nil {
			return Size{}, fmt.Errorf("store: size: %w", classify(err))
		}
		return Size{DatabaseBytes: n}, nil
	}
	db, err := os.Stat(s.path)
	if err != nil {
		return Size{}, fmt.Errorf("store: size: %w", err)
	}
	out := Size{DatabaseBytes: db.Size()}
	wal, err := os.Stat(s.path + "-wal")
	switch {
	case err == nil:
		out.WALBytes = wal.Size()
	case !errors.Is(err, fs.ErrNotExist):
		return Size{}, fmt.Errorf("store: size: %w", err)
	}
	return out, nil
}

// CountLanes is how many lanes the store knows, of every platform.
func (s *Store) CountLanes(ctx context.Context) (int, error) {
	var n int
	if err := s.rq.QueryRowContext(ctx, `SELECT COUNT(*) FROM gateway_routing`).Scan(&n); err != nil {
		return 0, fmt.Errorf("store: count lanes: %w", classify(err))
	}
	return n, nil
}
