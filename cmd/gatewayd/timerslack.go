package main

import (
	"os"
	"runtime"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/internal/timerslack"
)

// daemonTimerSlack is the timer slack the daemon runs with unless its
// operator chose one.
//
// Why: the Go runtime's sysmon thread wakes every 20 µs while any
// goroutine runs or sits in a syscall, and gatewayd's work comes in short
// bursts (a codex line, an HTTP response, a commit), each of which woke it
// several times. With the kernel's default slack of 50 µs those wake-ups
// were 0.6-0.9 ms of CPU per message on the 2-core VM (of ~5), with 1 ms
// 0.15-0.2 ms, and the reply latency did not move (tools/loadgen
// -timer-slack). What it costs: the runtime notices a goroutine blocked in
// a syscall (an fsync) up to about a millisecond later before it runs the
// others, and timers may fire up to a millisecond late; gatewayd has no
// timer finer than that. The app-server and the commands it runs inherit
// the slack, as they would under systemd's TimerSlackNSec=.
const daemonTimerSlack = time.Millisecond

// envTimerSlackRaised marks the process raiseTimerSlack re-executed, so it
// never does so twice; removed from the environment at once, so children do
// not inherit it.
const envTimerSlackRaised = "GATEWAYD_TIMER_SLACK_RAISED"

// raiseTimerSlack re-executes the daemon once, with daemonTimerSlack, when
// it was started with the kernel's default slack. sysmon is the runtime's
// first thread and takes its slack from the main thread when the process
// starts, before any of gatewayd's code runs, so a slack set later would
// not reach it; execve keeps the calling thread's slack for the new image.
// A slack other than the default is the operator's choice (systemd's
// TimerSlackNSec=) and is kept. Only `run` does this; on failure the daemon
// runs on as it is.
func raiseTimerSlack(args []string) {
	if os.Getenv(envTimerSlackRaised) != "" {
		_ = os.Unsetenv(envTimerSlackRaised)
		return
	}
	if !timerslack.Supported || !runsDaemon(args) {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if cur, err := timerslack.Current(); err != nil || cur != timerslack.KernelDefault {
		return
	}
	if err := timerslack.Set(daemonTimerSlack); err != nil {
		return
	}
	// The binary by its path, not /proc/self/exe: the process's name (ps,
	// pgrep, the journal's _COMM) is the file's name it was executed as.
	exe, err := os.Executable()
	if err == nil {
		env := append(os.Environ(), envTimerSlackRaised+"=1")
		// Exec returns only when it failed; the daemon then runs on as it
		// is (its start-up log line says which slack it has).
		_ = syscall.Exec(exe, os.Args, env)
	}
	_ = timerslack.Set(timerslack.KernelDefault)
}

// logTimerSlack reports the slack the daemon runs with (raiseTimerSlack's
// outcome, or the operator's choice).
func logTimerSlack(log *zap.Logger) {
	if cur, err := timerslack.Current(); err == nil {
		log.Info("runtime.timer_slack", zap.Duration("slack", cur))
	}
}

// runsDaemon says whether the command line runs the daemon (see dispatch).
func runsDaemon(args []string) bool {
	return len(args) == 0 || args[0] == "run" || strings.HasPrefix(args[0], "-")
}
