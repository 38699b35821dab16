package pgtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Run(m)) }

// psql runs one statement against dsn's database and returns its output.
func psql(t *testing.T, s *Server, db, sql string) string {
	t.Helper()
	out, err := exec.Command(filepath.Join(s.bin, "psql"), "-h", "127.0.0.1", "-p", strconv.Itoa(s.port),
		"-U", Superuser, "-d", db, "-XAtc", sql).CombinedOutput()
	if err != nil {
		t.Fatalf("psql %q: %v: %s", sql, err, out)
	}
	return strings.TrimSpace(string(out))
}

func TestSharedServerGivesEachTestItsOwnDatabase(t *testing.T) {
	s := Shared(t)
	a, b := s.NewDatabase(t), s.NewDatabase(t)
	if a == b {
		t.Fatalf("two databases share a DSN: %s", a)
	}
	nameA := a[strings.LastIndex(a, "/")+1 : strings.Index(a, "?")]
	psql(t, s, nameA, "CREATE TABLE x(v int); INSERT INTO x VALUES (7)")
	if got := psql(t, s, nameA, "SELECT v FROM x"); got != "7" {
		t.Fatalf("read back %q, want 7", got)
	}
	if Shared(t) != s {
		t.Fatal("Shared started a second server")
	}
}

func TestDurableServerKeepsCommittedRowsAcrossAKill(t *testing.T) {
	s := Start(t, Options{Durable: true})
	dsn := s.NewDatabase(t)
	db := dsn[strings.LastIndex(dsn, "/")+1 : strings.Index(dsn, "?")]
	psql(t, s, db, "CREATE TABLE x(v int); INSERT INTO x VALUES (42)")
	s.Kill()
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := psql(t, s, db, "SELECT v FROM x"); got != "42" {
		t.Fatalf("after kill -9 and restart read %q, want 42", got)
	}
}

func TestFastRestartKeepsCommittedRows(t *testing.T) {
	s := Start(t, Options{})
	dsn := s.NewDatabase(t)
	db := dsn[strings.LastIndex(dsn, "/")+1 : strings.Index(dsn, "?")]
	psql(t, s, db, "CREATE TABLE x(v int); INSERT INTO x VALUES (9)")
	if err := s.FastRestart(); err != nil {
		t.Fatal(err)
	}
	if got := psql(t, s, db, "SELECT v FROM x"); got != "9" {
		t.Fatalf("after a fast restart read %q, want 9", got)
	}
}

func TestQuitRefusesConnectionsUntilRestart(t *testing.T) {
	s := Start(t, Options{Durable: true})
	dsn := s.NewDatabase(t)
	db := dsn[strings.LastIndex(dsn, "/")+1 : strings.Index(dsn, "?")]
	psql(t, s, db, "CREATE TABLE x(v int); INSERT INTO x VALUES (5)")
	if err := s.Quit(); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(filepath.Join(s.bin, "psql"), "-h", "127.0.0.1", "-p", strconv.Itoa(s.port),
		"-U", Superuser, "-d", db, "-XAtc", "SELECT 1").CombinedOutput()
	if err == nil {
		t.Fatalf("psql after Quit succeeded: %s", out)
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if got := psql(t, s, db, "SELECT v FROM x"); got != "5" {
		t.Fatalf("after an immediate shutdown and restart read %q, want 5", got)
	}
}
