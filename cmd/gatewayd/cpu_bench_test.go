package main

import (
	"bytes"
	"flag"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/tools/loadgen"
)

// BenchmarkDaemonCPUPerMessage measures what one message on the API lane
// costs the whole gatewayd process in CPU (user + system, from /proc),
// beside what it costs the real codex app-server (and whatever it runs) in
// the same run: the built binary, the real app-server, the instant fake
// model, one lane, each message posted when the last was answered. The
// first message (the thread's start) is not counted. Run it with a fixed
// count so the runs compare:
//
//	go test ./cmd/gatewayd -run '^$' -bench DaemonCPUPerMessage -benchtime 200x -count 3
func BenchmarkDaemonCPUPerMessage(b *testing.B) {
	for _, isolation := range []string{"lanes", "none"} {
		b.Run("isolation="+isolation, func(b *testing.B) { benchDaemonCPU(b, isolation) })
	}
}

// benchCPUProfile has each run write the daemon's CPU profile to this path
// with the isolation mode appended (the last run's is kept).
var benchCPUProfile = flag.String("daemon-cpuprofile", "", "BenchmarkDaemonCPUPerMessage: write the daemon's CPU profile to this path + .<isolation>")

// benchDaemonBin runs a prebuilt gatewayd instead of this tree's, so that
// builds before and after a change can run alternately on a machine whose
// load moves.
var benchDaemonBin = flag.String("gatewayd-bin", "", "BenchmarkDaemonCPUPerMessage: run this gatewayd binary instead of building this tree")

func benchDaemonCPU(b *testing.B, isolation string) {
	model := codextest.NewModel(b)
	dir := b.TempDir()
	addr := freeAddr(b)
	cfgFile := writeProcessConfig(b, dir, map[string]any{
		"state_dir": filepath.Join(dir, "state"),
		"log":       map[string]any{"level": "info", "format": "json"},
		"codex": map[string]any{
			// SandboxArgs leave the sandbox to the daemon's default, so that
			// isolation: lanes confines as it does in production.
			"command": codextest.CodexBinary(b), "args": codextest.SandboxArgs(model.URL), "home": codextest.Home(b),
			"isolation": isolation, "start_timeout": "60s",
		},
		"api": map[string]any{"listen": addr, "token": "bench-token"},
		// One sender sends every message: the limit stays on, as by
		// default, but above what the run sends in a minute.
		"lanes": map[string]any{"max_per_minute": 1_000_000},
	})
	api := &client.API{Base: "http://" + addr, Token: "bench-token", HTTP: &http.Client{Timeout: 2 * time.Minute}}
	start := func(c *exec.Cmd) error {
		// The systemd unit's WatchdogSec=60s, not the process tests' 2s:
		// a ping of the store and codex every second would be counted in
		// every message of a slow run.
		c.Env = append(c.Env, "WATCHDOG_USEC=60000000")
		if *benchCPUProfile != "" {
			c.Env = append(c.Env, envCPUProfile+"="+*benchCPUProfile+"."+isolation)
		}
		return c.Start()
	}
	bin := *benchDaemonBin
	if bin == "" {
		bin = buildDaemon(b)
	}
	d := startDaemonWith(b, bin, cfgFile, dir, "bench", listenNotify(b).path, start)
	waitHealthy(b, api, d)
	const lane = "cpu"
	postEcho(b, api, lane, "warm up")
	pid := d.cmd.Process.Pid
	before := cpuOf(b, pid)
	b.ResetTimer()
	for i := range b.N {
		postEcho(b, api, lane, "message "+strconv.Itoa(i))
	}
	b.StopTimer()
	after := cpuOf(b, pid)
	n := float64(b.N)
	b.ReportMetric(ms(after.own-before.own)/n, "daemon-ms/msg")
	b.ReportMetric(ms(after.sys-before.sys)/n, "daemon-sys-ms/msg")
	b.ReportMetric(ms(after.reaped-before.reaped)/n, "daemon-children-ms/msg")
	b.ReportMetric(ms(after.codex-before.codex)/n, "codex-ms/msg")
	b.ReportMetric(float64(after.writes-before.writes)/n, "daemon-writes/msg")
	b.ReportMetric(float64(after.written-before.written)/n/1024, "daemon-written-KB/msg")
	if code := d.terminate(b, 30*time.Second); code != 0 {
		b.Fatalf("exit %d after SIGTERM:\n%s", code, d.logs())
	}
}

// postEcho sends text and checks the fake model's echo came back.
func postEcho(b *testing.B, api *client.API, lane, text string) {
	b.Helper()
	reply, err := tryPostMessage(api, lane, text)
	if err != nil {
		b.Fatalf("post %q: %v", text, err)
	}
	if !strings.Contains(reply, text) {
		b.Fatalf("reply %q does not echo %q", reply, text)
	}
}

// daemonCPU is CPU time read from /proc.
type daemonCPU struct {
	own, sys time.Duration // the daemon's own (utime + stime) and of it stime
	reaped   time.Duration // the daemon's children that exited (git, …): cutime + cstime
	codex    time.Duration // the live process tree below the daemon: the app-server and what it ran
	// From /proc/<pid>/io: the daemon's write syscalls (pwrite of WAL
	// frames, sockets, pipes) and the bytes they wrote, exact where CPU
	// time moves with the machine's load.
	writes, written int64
}

func cpuOf(b *testing.B, pid int) daemonCPU {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name: f[0] is field 3; utime..cstime are 14..17.
	f := strings.Fields(string(raw[bytes.LastIndexByte(raw, ')')+1:]))
	tick := func(field int) time.Duration {
		v, err := strconv.ParseInt(f[field-3], 10, 64)
		if err != nil {
			b.Fatalf("/proc/%d/stat field %d: %v", pid, field, err)
		}
		return time.Duration(v) * 10 * time.Millisecond // USER_HZ is 100
	}
	u, err := loadgen.Measure(pid)
	if err != nil {
		b.Fatal(err)
	}
	c := daemonCPU{own: tick(14) + tick(15), sys: tick(15), reaped: tick(16) + tick(17), codex: u.ChildCPU}
	c.writes, c.written = ioOf(b, pid)
	return c
}

// ioOf reads syscw and wchar from /proc/<pid>/io.
func ioOf(b *testing.B, pid int) (writes, written int64) {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "io"))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		name, value, _ := strings.Cut(line, ": ")
		v, _ := strconv.ParseInt(value, 10, 64)
		switch name {
		case "syscw":
			writes = v
		case "wchar":
			written = v
		}
	}
	return writes, written
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
