package store

import (
	"context"
	"database/sql"
	"sync"
	"sync/atomic"
	"time"
)

// maxCachedStatements bounds the statement caches. The store's SQL is a
// fixed set of constant strings, far fewer than this; the bound only keeps
// a future bug that builds SQL dynamically from growing memory.
const maxCachedStatements = 256

// stmtCache is a querier that prepares each distinct query once and reuses
// it. Parsing is a large share of a small write's cost in SQLite, and
// database/sql does not cache prepared statements by itself. A query must
// be one statement: preparing compiles only the first.
type stmtCache struct {
	db interface {
		querier
		PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
	}
	d     *dialect
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
	// ran counts the statements run through the cache (Store.Statements).
	ran atomic.Int64
	// retryReads: a read pool on PostgreSQL, whose pooled connections all
	// die with a server restart; poolSize is its number of connections,
	// retryWindow how long a failed read is retried.
	retryReads  bool
	poolSize    int
	retryWindow time.Duration
}

func newStmtCache(db interface {
	querier
	PrepareContext(ctx context.Context, query string) (*sql.Stmt, error)
}, d *dialect) *stmtCache {
	return &stmtCache{db: db, d: d, stmts: make(map[string]*sql.Stmt)}
}

// sql is query in the dialect's placeholders.
func (c *stmtCache) sql(query string) string {
	if c.d.rebind == nil {
		return query
	}
	return c.d.rebind(query)
}

// stmt returns the prepared statement for query, or nil when it should run
// unprepared (cache full or preparation failed: the direct call then
// reports the same error to the caller).
func (c *stmtCache) stmt(ctx context.Context, query string) *sql.Stmt {
	if !c.d.prepare {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts[query]; ok {
		return st
	}
	if len(c.stmts) >= maxCachedStatements {
		return nil
	}
	st, err := c.db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	c.stmts[query] = st
	return st
}

func (c *stmtCache) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	for r := (*retrier)(nil); ; {
		res, err := c.execOnce(ctx, query, args...)
		if !c.retryRead(ctx, &r, err) {
			return res, err
		}
	}
}

func (c *stmtCache) execOnce(ctx context.Context, query string, args ...any) (sql.Result, error) {
	c.ran.Add(1)
	if st := c.stmt(ctx, query); st != nil {
		return st.ExecContext(ctx, args...)
	}
	return c.db.ExecContext(ctx, c.sql(query), args...)
}

func (c *stmtCache) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	for r := (*retrier)(nil); ; {
		rows, err := c.queryOnce(ctx, query, args...)
		if !c.retryRead(ctx, &r, err) {
			return rows, err
		}
	}
}

func (c *stmtCache) queryOnce(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	c.ran.Add(1)
	if st := c.stmt(ctx, query); st != nil {
		return st.QueryContext(ctx, args...)
	}
	return c.db.QueryContext(ctx, c.sql(query), args...)
}

func (c *stmtCache) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	for r := (*retrier)(nil); ; {
		row := c.queryRowOnce(ctx, query, args...)
		if !c.retryRead(ctx, &r, row.Err()) {
			return row
		}
	}
}

func (c *stmtCache) queryRowOnce(ctx context.Context, query string, args ...any) *sql.Row {
	c.ran.Add(1)
	if st := c.stmt(ctx, query); st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return c.db.QueryRowContext(ctx, c.sql(query), args...)
}

// retryRead reports whether a read that failed with err runs again (the
// read pool on PostgreSQL, a transient failure, transient.go): at once
// while each failure may only have found one more dead pooled connection,
// then with backoff until its retry window has passed or ctx ends. *r is
// the read's retrier, made at its first failure.
func (c *stmtCache) retryRead(ctx context.Context, r **retrier, err error) bool {
	if !c.retryReads || err == nil || !transient(ctx, err) {
		return false
	}
	if *r == nil {
		*r = newRetrier(c.retryWindow)
	}
	if (*r).attempts < c.poolSize {
		(*r).attempts++
		return true
	}
	return (*r).wait(ctx)
}

// Close closes every cached statement.
func (c *stmtCache) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for q, st := range c.stmts {
		if err := st.Close(); err != nil && first == nil {
			first = err
		}
		delete(c.stmts, q)
	}
	return first
}
