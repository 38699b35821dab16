package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver, for direct checks
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatewayd/gatewayd/internal/pgtest"
)

func TestRebindDollar(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, in, want string }{
		{"bare", "SELECT ? WHERE a = ? AND b = ?", "SELECT $1 WHERE a = $2 AND b = $3"},
		{"numbered reused", "a = ?1 AND (?2 = '' OR b = ?2) LIMIT ?3", "a = $1 AND ($2 = '' OR b = $2) LIMIT $3"},
		{"bare after numbered", "a = ?2 AND b = ?", "a = $2 AND b = $3"},
		{"quoted", `a = '?' AND "b?" = ? AND c = 'it''s ?'`, `a = '?' AND "b?" = $1 AND c = 'it''s ?'`},
		{"comment", "a = ? -- why?\nAND b = ?", "a = $1 -- why?\nAND b = $2"},
		{"none", "SELECT 1", "SELECT 1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := rebindDollar(tc.in); got != tc.want {
				t.Fatalf("rebindDollar(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// pgDatabase is a fresh database on the shared server, whatever backend
// the rest of the suite runs on: these tests are PostgreSQL's counterparts
// of the SQLite-only ones.
func pgDatabase(t *testing.T) string {
	t.Helper()
	return pgtest.Shared(t).NewDatabase(t)
}

func openPG(t *testing.T, dsn string, opts Options) *Store {
	t.Helper()
	s, err := OpenPostgres(context.Background(), dsn, opts)
	if err != nil {
		t.Fatalf("OpenPostgres: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// Two gatewayds on one database would fight over every lane: the second
// is refused at open with the lock holder named, and the lock goes with
// Close.
func TestPostgresSecondStoreIsRefused(t *testing.T) {
	t.Parallel()
	dsn := pgDatabase(t)
	first := openPG(t, dsn, Options{})
	_, err := OpenPostgres(context.Background(), dsn, Options{pgLockWait: -1})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "gatewayd pid") {
		t.Fatalf("second OpenPostgres err = %v, want ErrLocked naming the holder", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	openPG(t, dsn, Options{})
}

// A different database on the same server is another gatewayd's: the
// advisory lock is per database.
func TestPostgresLockIsPerDatabase(t *testing.T) {
	t.Parallel()
	openPG(t, pgDatabase(t), Options{})
	openPG(t, pgDatabase(t), Options{})
}

// parkInBatch submits an operation that writes a cursor and then waits
// inside the batch transaction until release is closed.
func parkInBatch(t *testing.T, s *Store, name string, started, release chan struct{}) *op {
	t.Helper()
	return submitAsync(t, s, func(ctx context.Context, q querier) error {
		if _, err := q.ExecContext(ctx, "INSERT INTO cursors (name, value, updated_at) VALUES (?, '1', 0)", name); err != nil {
			return err
		}
		close(started)
		<-release
		return nil
	})
}

func waitDone(t *testing.T, o *op, what string) error {
	t.Helper()
	select {
	case err := <-o.done:
		return err
	case <-time.After(time.Minute): // a guard against a hang, not a synchronisation
		t.Fatalf("%s: no answer within a minute (hung)", what)
		return nil
	}
}

// The server dies (SIGKILL) while a batch of two submissions is open and
// stays down past the retry window (shortened here): both submitters get
// an error naming the lost server, none hangs; a submission
// while the server is down fails the same way; after the server restarts
// the next submission succeeds on a new connection (the ownership lock
// retaken), the acknowledged row survived and the failed batch left
// nothing.
func TestPostgresServerKilledMidBatch(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t, pgtest.Options{Durable: true})
	s := openPG(t, srv.NewDatabase(t), Options{retryWindow: shortOutage})
	ctx := context.Background()
	if err := s.SetCursor(ctx, "acked", "1"); err != nil {
		t.Fatal(err)
	}

	xStarted, xRelease := make(chan struct{}), make(chan struct{})
	x := parkInBatch(t, s, "x", xStarted, xRelease)
	<-xStarted
	a := submitAsync(t, s, func(ctx context.Context, q querier) error {
		_, err := q.ExecContext(ctx, "INSERT INTO cursors (name, value, updated_at) VALUES ('a', '1', 0)")
		return err
	})
	cStarted, cRelease := make(chan struct{}), make(chan struct{})
	c := parkInBatch(t, s, "c", cStarted, cRelease)
	close(xRelease)
	if err := waitDone(t, x, "x"); err != nil {
		t.Fatalf("x: %v", err)
	}
	<-cStarted // a and c are in one open transaction
	srv.Kill()
	close(cRelease)
	for name, o := range map[string]*op{"a": a, "c": c} {
		if err := waitDone(t, o, name); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("%s after the server died: err = %v, want ErrUnavailable", name, err)
		}
	}
	if err := s.SetCursor(ctx, "down", "1"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("SetCursor with the server down: err = %v, want ErrUnavailable", err)
	}

	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := s.SetCursor(ctx, "after", "1"); err != nil {
		t.Fatalf("SetCursor after the restart: %v", err)
	}
	for name, want := range map[string]bool{"acked": true, "x": true, "after": true, "a": false, "c": false, "down": false} {
		if _, found, err := s.Cursor(ctx, name); err != nil || found != want {
			t.Errorf("cursor %s found = %v (%v), want %v", name, found, err, want)
		}
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping after the restart: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close after the reconnect: %v", err)
	}
}

// A store whose server is gone still closes cleanly: Close neither hangs
// nor reports the connection it already knew was lost.
func TestPostgresCloseWithTheServerDown(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t, pgtest.Options{})
	s := openPG(t, srv.NewDatabase(t), Options{retryWindow: shortOutage})
	srv.Kill()
	// The first write finds the connection lost, the second fails to
	// replace it.
	for _, name := range []string{"down", "still down"} {
		if err := s.SetCursor(context.Background(), name, "1"); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("SetCursor(%s) with the server down: err = %v, want ErrUnavailable", name, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close with the server down: %v", err)
	}
}

// While the store is reconnected, another gatewayd that took the database
// in between keeps it: the writer refuses to write instead of sharing.
func TestPostgresReconnectRespectsANewOwner(t *testing.T) {
	t.Parallel()
	srv := pgtest.Start(t, pgtest.Options{Durable: true})
	dsn := srv.NewDatabase(t)
	s := openPG(t, dsn, Options{retryWindow: shortOutage})
	srv.Kill()
	if err := s.SetCursor(context.Background(), "down", "1"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("SetCursor with the server down: err = %v, want ErrUnavailable", err)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	openPG(t, dsn, Options{}) // the new owner (waits for the old session's lock to go)
	if err := s.SetCursor(context.Background(), "late", "1"); !errors.Is(err, ErrLocked) {
		t.Fatalf("old owner's write after the takeover: err = %v, want ErrLocked", err)
	}
}

// A DSN's password never shows in an error or a log line, whatever fails:
// a malformed DSN, a missing database, a server that does not answer, a
// locked database. (pgtest's server trusts loopback logins, so the role's
// password is carried but not checked.)
func TestPostgresPasswordNeverInErrors(t *testing.T) {
	t.Parallel()
	const password = "s3cret-pw-Zq9"
	srv := pgtest.Start(t, pgtest.Options{Durable: true})
	admin, err := sql.Open("pgx", srv.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	if _, err := admin.Exec("CREATE ROLE bob LOGIN SUPERUSER PASSWORD '" + password + "'"); err != nil {
		t.Fatal(err)
	}
	withPassword := func(db string) string {
		u, _ := url.Parse(srv.DSN(db))
		u.User = url.UserPassword("bob", password)
		return u.String()
	}
	core, logs := observer.New(zap.DebugLevel)
	opts := Options{Logger: zap.New(core), pgLockWait: -1, retryWindow: shortOutage}
	dbName := strings.TrimPrefix(must(url.Parse(srv.NewDatabase(t))).Path, "/")
	owner := openPG(t, withPassword(dbName), opts)

	var errs []error
	_, err = OpenPostgres(context.Background(), withPassword(dbName), opts) // locked
	errs = append(errs, err)
	_, err = OpenPostgres(context.Background(), withPassword("no_such_db"), opts)
	errs = append(errs, err)
	_, err = OpenPostgres(context.Background(), "postgres://bob:"+password+"@127.0.0.1:notaport/x", opts)
	errs = append(errs, err)
	_, err = OpenPostgres(context.Background(), "host=127.0.0.1 port=1 user=bob password="+password+" dbname=x connect_timeout=5", opts)
	errs = append(errs, err)
	_, err = InspectPostgres(context.Background(), "postgres://bob:"+password+"@127.0.0.1:1/x?connect_timeout=5")
	errs = append(errs, err)
	srv.Kill()
	errs = append(errs, owner.SetCursor(context.Background(), "down", "1"))
	for i, err := range errs {
		if err == nil {
			t.Fatalf("case %d: no error", i)
		}
		t.Logf("case %d: %v", i, err)
		if strings.Contains(err.Error(), password) {
			t.Fatalf("case %d: error shows the password: %v", i, err)
		}
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	if err := owner.SetCursor(context.Background(), "up", "1"); err != nil {
		t.Fatal(err)
	}
	for _, e := range logs.All() {
		if line := fmt.Sprint(e.Message, e.ContextMap()); strings.Contains(line, password) {
			t.Fatalf("log shows the password: %s", line)
		}
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

func TestPostgresRefusesNewerSchema(t *testing.T) {
	t.Parallel()
	dsn := pgDatabase(t)
	s := openPG(t, dsn, Options{})
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("UPDATE schema_version SET version = $1", len(pgMigrations)+1); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenPostgres(context.Background(), dsn, Options{}); err == nil || !strings.Contains(err.Error(), "newer") {
		t.Fatalf("OpenPostgres on a newer schema: err = %v, want a refusal", err)
	}
}

func TestPostgresInspect(t *testing.T) {
	t.Parallel()
	dsn := pgDatabase(t)
	ctx := context.Background()
	h, err := InspectPostgres(ctx, dsn)
	if err != nil || h.Driver != "postgres" || h.SchemaVersion != 0 || h.WantVersion != len(pgMigrations) || h.Server == "" {
		t.Fatalf("InspectPostgres(empty) = %+v, %v", h, err)
	}
	openPG(t, dsn, Options{}) // Inspect runs beside the owner
	if h, err = InspectPostgres(ctx, dsn); err != nil || h.SchemaVersion != len(pgMigrations) {
		t.Fatalf("InspectPostgres(open) = %+v, %v", h, err)
	}
}

// Both backends have the same tables and columns: a migration added to one
// list only (migrations, pgMigrations) fails here. SQLite's FTS5 tables
// are its search index (a GIN index on PostgreSQL); schema_version is
// PostgreSQL's PRAGMA user_version.
func TestPostgresSchemaMatchesSQLite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lite, err := Open(ctx, filepath.Join(t.TempDir(), "state.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	pg := openPG(t, pgDatabase(t), Options{})
	want := schemaColumns(t, lite, `SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p
		WHERE m.type = 'table' AND m.name NOT LIKE 'messages_fts%' AND m.name NOT LIKE 'sqlite_%'`)
	got := schemaColumns(t, pg, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name <> 'schema_version'`)
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PostgreSQL schema differs from SQLite's:\n got %v\nwant %v", got, want)
	}
}

func schemaColumns(t *testing.T, s *Store, query string) map[string][]string {
	t.Helper()
	rows, err := s.rq.QueryContext(context.Background(), query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var table, column string
		if err := rows.Scan(&table, &column); err != nil {
			t.Fatal(err)
		}
		out[table] = append(out[table], column)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for _, cols := range out {
		slices.Sort(cols)
	}
	return out
}
