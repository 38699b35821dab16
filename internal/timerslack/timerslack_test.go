package timerslack

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Set changes the calling thread's slack, Current reads it back, and a
// child started with Start runs with the slack it was given while this
// thread keeps its own.
func TestSetAndStart(t *testing.T) {
	if !Supported {
		t.Skip("no timer slack on this system")
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	old, err := Current()
	if err != nil {
		t.Fatal(err)
	}
	defer Set(old)
	if err := Set(300 * time.Microsecond); err != nil {
		t.Fatal(err)
	}
	if got, _ := Current(); got != 300*time.Microsecond {
		t.Fatalf("Current = %v after Set(300µs)", got)
	}
	if err := Set(old); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command("sleep", "30")
	if err := Start(cmd, 2*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/timerslack_ns")
	if err != nil {
		t.Skipf("cannot read the child's slack: %v", err)
	}
	if got := strings.TrimSpace(string(raw)); got != "2000000" {
		t.Errorf("child's timer slack = %s ns, want 2000000", got)
	}
	if got, _ := Current(); got != old {
		t.Errorf("this thread's slack = %v after Start, want %v back", got, old)
	}
}
