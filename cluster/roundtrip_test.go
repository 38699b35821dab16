package cluster

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// countedDB opens a pool on dsn that counts the round trips its
// connections make (statements and transaction starts), as a test of how
// many a call costs.
func countedDB(t testing.TB, dsn string) (*sql.DB, *atomic.Int64) {
	db, trips, _ := countedDBConns(t, dsn)
	return db, trips
}

// countedDBConns is countedDB that also counts the connections opened.
func countedDBConns(t testing.TB, dsn string) (*sql.DB, *atomic.Int64, *atomic.Int64) {
	t.Helper()
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	n, conns := &atomic.Int64{}, &atomic.Int64{}
	db := sql.OpenDB(countingConnector{Connector: stdlib.GetConnector(*cfg), n: n, conns: conns})
	t.Cleanup(func() { db.Close() })
	return db, n, conns
}

type countingConnector struct {
	driver.Connector
	n, conns *atomic.Int64
}

func (c countingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c.conns.Add(1)
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, n: c.n}, nil
}

// countingConn passes everything to pgx's connection, counting what goes
// to the server.
type countingConn struct {
	driver.Conn
	n *atomic.Int64
}

func (c *countingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.n.Add(1)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

func (c *countingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.n.Add(1)
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.n.Add(1)
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *countingConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
}

// CheckNamedValue lets pgx take the arguments it knows (text[] from a
// []string), as database/sql's own conversion would refuse them.
func (c *countingConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.Conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

func (c *countingConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

func (c *countingConn) IsValid() bool {
	v, ok := c.Conn.(driver.Validator)
	return !ok || v.IsValid()
}
