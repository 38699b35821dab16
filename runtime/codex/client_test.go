package codex

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/internal/poll"
	"go.uber.org/zap"
)

func TestStartHandshakeSkipsMalformedAndUnknownLines(t *testing.T) {
	fc := sharedFake(t)
	if err := fc.Ping(testCtx(t)); err != nil {
		t.Fatalf("Ping after garbage: %v", err)
	}
	got := fc.received(t)
	if len(got) < 3 || got[0] != "initialize" || got[1] != "initialized" {
		t.Fatalf("fake received %v, want initialize, initialized, ...", got)
	}
	// The connection survived the garbage and still routes turns.
	tid := fc.newThread(t)
	res, err := fc.RunTurn(testCtx(t), tid, TurnInput{Text: "echo still fine"}, TurnEvents{})
	if err != nil || res.Text != "still fine " {
		t.Fatalf("RunTurn = %q, %v", res.Text, err)
	}
}

func TestConcurrentRequestsAreCorrelated(t *testing.T) {
	fc := sharedFake(t)
	cn := fc.conn(t)
	const n = 64
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			want := fmt.Sprintf("payload-%d", i)
			var out struct{ V string }
			if err := cn.call(testCtx(t), "fake/echo", map[string]string{"V": want}, &out); err != nil {
				errs <- err
				return
			}
			if out.V != want {
				errs <- fmt.Errorf("request %d got %q", i, out.V)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestUnknownMethodIsTypedRPCError(t *testing.T) {
	fc := sharedFake(t)
	err := fc.conn(t).call(testCtx(t), "no/such", nil, nil)
	var rpcErr *RPCError
	if !errors.As(err, &rpcErr) || rpcErr.Code != -32600 || rpcErr.Method != "no/such" {
		t.Fatalf("err = %v, want RPCError -32600 for no/such", err)
	}
}

func TestStartTimesOutWhenInitializeIsNotAnswered(t *testing.T) {
	opts, _ := fakeOptions(t, fakeConfig{mode: "hang-init", tweak: func(o *Options) {
		o.StartTimeout = 200 * time.Millisecond
	}})
	_, err := Start(context.Background(), opts)
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("Start err = %v, want ErrTimeout", err)
	}
}

func TestProcessDeathMidTurnRestartsAndResumes(t *testing.T) {
	t.Parallel()
	fc := startFake(t, fakeConfig{})
	tid := fc.newThread(t)
	first := fc.conn(t)

	var streamed []string
	res, err := fc.RunTurn(testCtx(t), tid, TurnInput{Text: "die"}, TurnEvents{Delta: func(d string) { streamed = append(streamed, d) }})
	if !errors.Is(err, ErrProcessDied) {
		t.Fatalf("RunTurn err = %v, want ErrProcessDied", err)
	}
	if res.TurnID == "" {
		t.Errorf("result lost the turn id")
	}
	fc.waitRestart(t, first)
	if got := fc.Restarts(); got != 1 {
		t.Errorf("Restarts = %d, want 1", got)
	}
	if _, err := fc.RunTurn(testCtx(t), tid, TurnInput{Text: "echo too early"}, TurnEvents{}); !errors.Is(err, ErrThreadNotLoaded) {
		t.Fatalf("RunTurn before resume err = %v, want ErrThreadNotLoaded", err)
	}
	ens, err := fc.EnsureThread(testCtx(t), tid, ThreadConfig{})
	if err != nil || ens.Outcome != OutcomeResumed || ens.ThreadID != tid {
		t.Fatalf("EnsureThread after restart = %+v, %v; want resumed %s", ens, err, tid)
	}
	res, err = fc.RunTurn(testCtx(t), tid, TurnInput{Text: "echo back again"}, TurnEvents{})
	if err != nil || res.Text != "back again " {
		t.Fatalf("RunTurn after resume = %q, %v", res.Text, err)
	}
}

func TestUnresponsiveProcessIsKilledAndRestarted(t *testing.T) {
	fc := startFake(t, fakeConfig{mode: "deaf-ping", tweak: func(o *Options) {
		o.HealthInterval = 20 * time.Millisecond
		o.HealthTimeout = 50 * time.Millisecond
	}})
	first := fc.conn(t)
	fc.waitRestart(t, first)
	if !errors.Is(first.err(), ErrProcessDied) {
		t.Errorf("dead conn err = %v, want ErrProcessDied", first.err())
	}
	select {
	case <-first.proc.exited:
	case <-testCtx(t).Done():
		t.Fatal("hung process was not reaped")
	}
	if fc.Restarts() < 1 {
		t.Errorf("Restarts = %d, want >= 1", fc.Restarts())
	}
}

func TestCloseKillsProcessGroup(t *testing.T) {
	opts, _ := fakeOptions(t, fakeConfig{mode: "child"})
	c, err := Start(testCtx(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWithin(c, 5*time.Second) }) // idempotent; for early failures
	var info struct{ Pid, ChildPid int }
	if err := c.conn.call(testCtx(t), "fake/info", nil, &info); err != nil {
		t.Fatal(err)
	}
	if info.ChildPid == 0 {
		t.Fatal("fake did not start its grandchild")
	}
	ens, err := c.EnsureThread(testCtx(t), "", ThreadConfig{})
	if err != nil {
		t.Fatal(err)
	}
	tid := ens.ThreadID
	turnDone := make(chan error, 1)
	started := make(chan struct{})
	go func() {
		_, err := c.RunTurn(context.Background(), tid, TurnInput{Text: "deaf"}, TurnEvents{Started: func(string) { close(started) }})
		turnDone <- err
	}()
	<-started

	// An already expired ctx: no grace, straight to SIGKILL of the group.
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.Close(expired); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-turnDone; !errors.Is(err, ErrClosed) {
		t.Errorf("running turn err = %v, want ErrClosed", err)
	}
	if err := syscall.Kill(info.Pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("app-server pid %d still exists after Close (kill: %v)", info.Pid, err)
	}
	waitGone(t, info.ChildPid)
	if _, err := c.EnsureThread(testCtx(t), "", ThreadConfig{}); !errors.Is(err, ErrClosed) {
		t.Errorf("EnsureThread after Close err = %v, want ErrClosed", err)
	}
	if err := c.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// waitGone waits until pid no longer runs. The grandchild is reparented to
// init, which reaps it asynchronously, so a zombie counts as gone; there is
// no signal to wait on for another process's child, hence the polling.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	if !poll.Wait(5*time.Second, nil, func() bool {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return true
		}
		f := strings.Fields(string(stat))
		return len(f) > 2 && f[2] == "Z"
	}) {
		t.Errorf("process %d is still running", pid)
	}
}

func TestGracefulCloseLetsProcessExit(t *testing.T) {
	t.Parallel()
	opts, _ := fakeOptions(t, fakeConfig{})
	c, err := Start(testCtx(t), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeWithin(c, 5*time.Second) }) // idempotent; for early failures
	proc := c.conn.proc
	if err := c.Close(testCtx(t)); err != nil {
		t.Fatal(err)
	}
	// The fake exits 0 on stdin EOF; a SIGKILL would show as a signal.
	if proc.err != nil {
		t.Errorf("process ended with %v, want a clean exit on stdin EOF", proc.err)
	}
	if err := c.Ping(testCtx(t)); !errors.Is(err, ErrClosed) {
		t.Errorf("Ping after Close = %v, want ErrClosed", err)
	}
}

// runParent is a stand-in for gatewayd: it starts a client on a fake that
// ignores stdin EOF, prints the app-server's pid and waits to be killed.
func runParent() int {
	self, err := os.Executable()
	if err != nil {
		return 2
	}
	c, err := Start(context.Background(), Options{
		Command: self,
		Env:     []string{parentEnv + "=", fakeEnv + "=1", fakeModeEnv + "=ignore-eof"},
	})
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println(c.conn.proc.pid)
	select {}
}

func TestAppServerDiesWithSIGKILLedParent(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	parent := exec.Command(self)
	parent.Env = append(os.Environ(), parentEnv+"=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = parent.Process.Kill(); _ = parent.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	pid, convErr := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || convErr != nil {
		t.Fatalf("parent said %q (%v)", line, err)
	}
	if err := syscall.Kill(pid, 0); err != nil {
		t.Fatalf("app-server %d not running: %v", pid, err)
	}
	if err := parent.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = parent.Wait()
	waitGone(t, pid) // only the parent-death signal can kill it: it ignores stdin EOF
}

func closeWithin(c *Client, d time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	_ = c.Close(ctx)
}

func TestRestartBacksOffWhileStartsFail(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "fail")
	fc := startFake(t, fakeConfig{tweak: func(o *Options) {
		o.Env = append(o.Env, fakeFailEnv+"="+flag)
		o.RestartBackoff = time.Millisecond
		o.RestartBackoffMax = 20 * time.Millisecond
	}})
	first := fc.conn(t)
	writeFile(t, flag, "")
	first.proc.kill()

	// No signal crosses from the failing children: poll their log.
	if !poll.Wait(10*time.Second, nil, func() bool { return count(fc.received(t), "failstart") >= 3 }) {
		t.Fatalf("restart attempts: %v", fc.received(t))
	}
	if fc.Restarts() != 0 {
		t.Errorf("Restarts = %d while every start fails", fc.Restarts())
	}
	if err := os.Remove(flag); err != nil {
		t.Fatal(err)
	}
	fc.waitRestart(t, first)
	if fc.Restarts() != 1 {
		t.Errorf("Restarts = %d, want 1", fc.Restarts())
	}
	if err := fc.Ping(testCtx(t)); err != nil {
		t.Errorf("Ping after recovery: %v", err)
	}
}

// Output the process wrote just before exiting is read to the end before
// the connection is marked dead: a turn cut off by the process's death
// still reports everything streamed.
func TestOutputWrittenBeforeExitIsNotLost(t *testing.T) {
	fc := startFake(t, fakeConfig{})
	tid := fc.newThread(t)
	const n = 200 // 200 KiB: more than the pipe holds when the process is reaped
	var streamed int
	res, err := fc.RunTurn(testCtx(t), tid, TurnInput{Text: fmt.Sprintf("die-flood %d", n)}, TurnEvents{Delta: func(d string) { streamed += len(d) }})
	if !errors.Is(err, ErrProcessDied) {
		t.Fatalf("err = %v, want ErrProcessDied", err)
	}
	if want := n*1024 + len("end"); streamed != want || !strings.HasSuffix(res.Text, " end") {
		t.Fatalf("streamed %d bytes (text ends %q), want %d ending in \"end\"", streamed, res.Text[max(0, len(res.Text)-8):], want)
	}
}

// Once the app-server is reaped its pid, which is its process group's id,
// may be reused: kill must not signal that group any more.
func TestKillAfterReapSparesAReusedGroupID(t *testing.T) {
	opts, _ := fakeOptions(t, fakeConfig{})
	p, err := spawn(opts.withDefaults(), opts.Command, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	_ = p.stdin.Close() // EOF: the fake exits
	select {
	case <-p.exited:
	case <-testCtx(t).Done():
		t.Fatal("the fake did not exit")
	}
	closeAll(p.stdout)

	// An unrelated process group, standing in for one that got the old id.
	victim := exec.Command("sleep", "300")
	victim.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	p.pid = victim.Process.Pid

	p.kill()
	// Signals are delivered in order and SIGKILL cannot be caught: the
	// victim dies of SIGTERM only if kill sent it nothing.
	_ = victim.Process.Signal(syscall.SIGTERM)
	_ = victim.Wait()
	if sig := victim.ProcessState.Sys().(syscall.WaitStatus).Signal(); sig != syscall.SIGTERM {
		t.Fatalf("the unrelated group got %v after the reaped process's kill", sig)
	}
}
