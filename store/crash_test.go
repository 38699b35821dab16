package store

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	crashChildEnv     = "GATEWAYD_STORE_CRASH_CHILD"
	crashIterations   = 20
	crashWriters      = 8
	crashChildTimeout = 20 * time.Second
)

var errCrashDeliberate = errors.New("deliberate failure")

// runCrashChild is the child half of TestCrashConsistency: several writers,
// durable and lazy, submit pair operations (two rows that must exist together) and print the
// name of each one acknowledged. Every tenth operation writes its first row
// and then fails; its row must never become visible. The child runs until
// the parent kills it (or a safety timeout).
func runCrashChild(path string) int {
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		return 2
	}
	var out sync.Mutex
	deadline := time.Now().Add(crashChildTimeout)
	var wg sync.WaitGroup
	for w := 0; w < crashWriters; w++ {
		wg.Add(1)
		// Half the writers commit lazily (no fsync): a killed process
		// must lose none of those either.
		write := s.write
		if w%2 == 1 {
			write = s.writeLazy
		}
		go func() {
			defer wg.Done()
			for i := 0; time.Now().Before(deadline); i++ {
				name := fmt.Sprintf("%d-%d-%d", os.Getpid(), w, i)
				err := write(context.Background(), pairOp(name, i%10 == 9))
				if err == nil {
					out.Lock()
					fmt.Println("ack", name)
					out.Unlock()
				} else if !errors.Is(err, errCrashDeliberate) {
					fmt.Fprintln(os.Stderr, "child write:", err)
					os.Exit(3)
				}
			}
		}()
	}
	wg.Wait()
	_ = s.Close()
	return 0
}

// pairOp writes cursors "a-name" and "b-name"; with fail it writes only
// "f-name" and fails, so its savepoint must be rolled back.
func pairOp(name string, fail bool) writeFunc {
	return func(ctx context.Context, q querier) error {
		if fail {
			if _, err := q.ExecContext(ctx, "INSERT INTO cursors (name, value, updated_at) VALUES (?, 'x', 0)", "f-"+name); err != nil {
				return err
			}
			return errCrashDeliberate
		}
		for _, prefix := range []string{"a-", "b-"} {
			if _, err := q.ExecContext(ctx, "INSERT INTO cursors (name, value, updated_at) VALUES (?, 'x', 0)", prefix+name); err != nil {
				return err
			}
		}
		return nil
	}
}

// TestCrashConsistency SIGKILLs a writing child at random points, many
// times over one database, and checks after each kill that every
// acknowledged operation is present and no operation is half there.
// A killed process leaves the OS page cache intact, so this proves the
// acknowledge-after-commit protocol and SQLite's recovery, for lazy commits
// (writeLazy) as for durable ones; surviving power loss additionally rests
// on synchronous=FULL (see writePragmas), which a test cannot pull the
// plug on.
func TestCrashConsistency(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "a child process killed while writing the database file (TestPostgresServerKilledMidBatch is the server-side crash)")
	if testing.Short() {
		t.Skip("spawns child processes")
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed>>1))
	path := testDBPath(t)
	acked := map[string]bool{}
	for iter := 0; iter < crashIterations; iter++ {
		killAfter := 1 + rng.IntN(150)
		names := runAndKillChild(t, path, killAfter, iter == 0)
		for _, n := range names {
			acked[n] = true
		}
		verifyCrashState(t, path, acked, iter)
	}
	t.Logf("%d iterations, %d acknowledged operations verified", crashIterations, len(acked))
}

// runAndKillChild starts the child, reads acks until killAfter of them
// arrived, SIGKILLs it and returns every ack it printed (including those
// still in the pipe when it died). With checkLock it also checks that this
// process cannot open the database while the child owns it.
func runAndKillChild(t *testing.T, path string, killAfter int, checkLock bool) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var names []string
	sc := bufio.NewScanner(stdout)
	killed := false
	for sc.Scan() {
		name, ok := strings.CutPrefix(sc.Text(), "ack ")
		if !ok {
			continue
		}
		names = append(names, name)
		if checkLock && len(names) == 1 {
			if _, err := Open(context.Background(), path, Options{}); !errors.Is(err, ErrLocked) {
				t.Errorf("Open while the child owns the database: err = %v, want ErrLocked", err)
			}
		}
		if len(names) == killAfter && !killed {
			if err := cmd.Process.Kill(); err != nil {
				t.Fatalf("kill child: %v", err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	if !killed {
		t.Fatalf("child exited before %d acks (%d): %v\n%s", killAfter, len(names), err, stderr.String())
	}
	if stderr.Len() > 0 && !strings.Contains(stderr.String(), "PASS") {
		t.Logf("child stderr: %s", stderr.String())
	}
	return names
}

func verifyCrashState(t *testing.T, path string, acked map[string]bool, iter int) {
	t.Helper()
	s, err := Open(context.Background(), path, Options{})
	if err != nil {
		t.Fatalf("iteration %d: reopen after kill: %v", iter, err)
	}
	defer s.Close()
	rows, err := s.readDB.Query("SELECT name FROM cursors")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	halves := map[string]int{}
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		prefix, rest, _ := strings.Cut(name, "-")
		if prefix == "f" {
			t.Fatalf("iteration %d: row %q of a failed operation is visible", iter, name)
		}
		halves[rest]++
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	for name, n := range halves {
		if n != 2 {
			t.Fatalf("iteration %d: operation %s is partial (%d of 2 rows)", iter, name, n)
		}
	}
	for name := range acked {
		if halves[name] != 2 {
			t.Fatalf("iteration %d: acknowledged operation %s is missing after the kill", iter, name)
		}
	}
}
