package gatewaytest

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// Child is this test binary re-executed to run one test as a separate
// process, so a test can kill -9 it (no deferred function, no graceful
// shutdown) and start another on the same files. The child reports on
// stdout; a line starting with "ERROR" fails the parent.
type Child struct {
	cmd   *exec.Cmd
	lines chan string
}

// StartChild runs the test named (alone) in a new process with env added
// to its environment. It is killed when t ends, if still running.
func StartChild(t testing.TB, name string, env ...string) *Child {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Child{cmd: cmd, lines: make(chan string, 64)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	t.Cleanup(c.Kill)
	return c
}

// Expect waits for a line starting with prefix and returns it.
func (c *Child) Expect(t testing.TB, prefix string) string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				t.Fatalf("child exited before %q", prefix)
			}
			if strings.HasPrefix(line, "ERROR") {
				t.Fatalf("child: %s", line)
			}
			if strings.HasPrefix(line, prefix) {
				return line
			}
		case <-deadline:
			t.Fatalf("child never printed %q", prefix)
		}
	}
}

// Kill is kill -9; it waits for the process to be gone.
func (c *Child) Kill() {
	if c.cmd.ProcessState != nil {
		return
	}
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
}
