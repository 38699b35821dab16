package cluster

import (
	"context"
	"database/sql"
	"os"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

// testContext bounds a database test; hitting it means a hang.
func testContext(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newDatabase returns the DSN of a fresh, migrated database on the shared
// server.
func newDatabase(t testing.TB) string {
	t.Helper()
	dsn := pgtest.Shared(t).NewDatabase(t)
	if err := Migrate(testContext(t), openDB(t, dsn)); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return dsn
}

// openDB opens its own pool on dsn, as a separate process would.
func openDB(t testing.TB, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatalf("sql.Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// newNode is node id with its own pool on dsn.
func newNode(t testing.TB, dsn, id string) *Node {
	t.Helper()
	n, err := NewNode(openDB(t, dsn), id)
	if err != nil {
		t.Fatalf("NewNode(%q): %v", id, err)
	}
	return n
}

// testClock replaces the database's clock for one database: cluster_now()
// becomes the real clock plus a skew the test advances, so time passes
// without waiting for it.
type testClock struct {
	t  testing.TB
	db *sql.DB
}

func installTestClock(t testing.TB, dsn string) *testClock {
	t.Helper()
	db := openDB(t, dsn)
	mustExec(t, db, `CREATE TABLE cluster_test_clock (skew interval NOT NULL);
		INSERT INTO cluster_test_clock VALUES ('0');
		CREATE OR REPLACE FUNCTION cluster_now() RETURNS timestamptz LANGUAGE sql VOLATILE
			AS $$ SELECT clock_timestamp() + (SELECT skew FROM cluster_test_clock) $$;`)
	return &testClock{t: t, db: db}
}

func (c *testClock) Advance(d time.Duration) {
	c.t.Helper()
	mustExec(c.t, c.db, `UPDATE cluster_test_clock SET skew = skew + $1 * interval '1 microsecond'`, d.Microseconds())
}

func mustExec(t testing.TB, db *sql.DB, q string, args ...any) {
	t.Helper()
	if _, err := db.ExecContext(testContext(t), q, args...); err != nil {
		t.Fatalf("exec %q: %v", q, err)
	}
}

// journal is the sample table of fenced writes: a lane's journal, written
// only by the lane's current owner.
const createJournal = `CREATE TABLE lane_journal (lane text NOT NULL, entry text NOT NULL)`

func writeJournal(ctx context.Context, db *sql.DB, l Lease, entry string) error {
	_, err := db.ExecContext(ctx, `INSERT INTO lane_journal (lane, entry)
		SELECT $1, $3 WHERE `+FenceSQL, l.Name, l.Token, entry)
	return FenceError(err)
}

func journalEntries(t testing.TB, db *sql.DB) []string {
	t.Helper()
	rows, err := db.QueryContext(testContext(t), `SELECT entry FROM lane_journal ORDER BY entry`)
	if err != nil {
		t.Fatalf("read journal: %v", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var e string
		if err := rows.Scan(&e); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}
