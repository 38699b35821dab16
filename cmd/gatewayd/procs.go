package main

import (
	"os"
	"runtime"

	"go.uber.org/zap"
)

// daemonProcs is how many threads run gatewayd's Go code at once when the
// operator did not set GOMAXPROCS: one per 8 CPUs the process may use, at
// least one. gatewayd's own work is a few milliseconds of CPU per message
// against ~90 ms for the app-server's, so one thread keeps up with what
// eight CPUs of app-server produce. More threads than that buy no
// throughput and cost CPU: idle threads spin looking for work and every
// goroutine hand-off (store worker, HTTP connections, codex reader) wakes
// another thread with a futex, which on the 2-core machine was about a
// quarter of gatewayd's CPU per message.
func daemonProcs(cpus int) int { return max(1, (cpus+7)/8) }

// tuneProcs is set by main: only the real process sizes the runtime. Tests
// that call Run in-process, several at once, must not change GOMAXPROCS
// for the whole test binary under each other.
var tuneProcs bool

// limitProcs applies daemonProcs for the daemon's run unless GOMAXPROCS is
// set (the Go runtime has applied that already), and returns the function
// that restores the previous value, so an in-process run leaves its
// caller's setting alone.
func limitProcs(log *zap.Logger) (restore func()) {
	prev := runtime.GOMAXPROCS(0)
	if os.Getenv("GOMAXPROCS") != "" {
		log.Info("runtime.procs", zap.Int("gomaxprocs", prev), zap.String("from", "GOMAXPROCS"))
		return func() {}
	}
	n := daemonProcs(prev)
	runtime.GOMAXPROCS(n)
	log.Info("runtime.procs", zap.Int("gomaxprocs", n), zap.Int("cpus", prev))
	return func() { runtime.GOMAXPROCS(prev) }
}
