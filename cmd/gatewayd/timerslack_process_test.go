package main

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/internal/timerslack"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// A daemon started with the kernel's default timer slack runs with
// daemonTimerSlack (it re-executed itself, keeping its pid), and so does
// the app-server it starts, which does not see the re-execution's marker.
// A daemon started with a slack somebody chose keeps it.
func TestProcessTimerSlack(t *testing.T) {
	if testing.Short() || !timerslack.Supported {
		t.Skip("builds and runs the daemon; Linux only")
	}
	bin := buildDaemon(t)
	model := codextest.NewModel(t)
	for _, tc := range []struct {
		name       string
		startWith  time.Duration
		want       time.Duration
		reexecuted bool
	}{
		{"kernel default", timerslack.KernelDefault, daemonTimerSlack, true},
		{"chosen", 200 * time.Microsecond, 200 * time.Microsecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			home := codextest.Home(t)
			addr := freeAddr(t)
			cfgFile := writeProcessConfig(t, dir, map[string]any{
				"state_dir": filepath.Join(dir, "state"),
				"codex": map[string]any{
					"command": codextest.CodexBinary(t), "args": codextest.Args(model.URL), "home": home,
					"cwd": filepath.Join(dir, "work"), "sandbox": "danger-full-access", "start_timeout": "60s",
				},
				"api": map[string]any{"listen": addr, "token": "test-token"},
			})
			api := &client.API{Base: "http://" + addr, Token: "test-token", HTTP: &http.Client{Timeout: 2 * time.Minute}}
			d := startDaemonWith(t, bin, cfgFile, dir, tc.name, listenNotify(t).path,
				func(c *exec.Cmd) error { return timerslack.Start(c, tc.startWith) })
			waitHealthy(t, api, d)
			if reply := postMessage(t, api, "slack", "hello"); !strings.Contains(reply, "hello") {
				t.Fatalf("reply %q does not echo the message", reply)
			}
			if got := slackOf(t, d.cmd.Process.Pid); got != tc.want {
				t.Errorf("daemon's timer slack = %v, want %v", got, tc.want)
			}
			// Re-executed or not, it keeps its name (ps, pgrep, the journal).
			comm, err := os.ReadFile("/proc/" + strconv.Itoa(d.cmd.Process.Pid) + "/comm")
			if want := filepath.Base(bin); err != nil || strings.TrimSpace(string(comm)) != want[:min(len(want), 15)] {
				t.Errorf("daemon's process name = %q (%v), want %q", strings.TrimSpace(string(comm)), err, want)
			}
			marked := processesWithEnv(envTimerSlackRaised + "=1")
			if got := slices.Contains(marked, d.cmd.Process.Pid); got != tc.reexecuted {
				t.Errorf("daemon re-executed = %v, want %v", got, tc.reexecuted)
			}
			codex := processesWithEnv("CODEX_HOME=" + home)
			if len(codex) == 0 {
				t.Fatal("no app-server process found")
			}
			for _, pid := range codex {
				if got := slackOf(t, pid); got != tc.want {
					t.Errorf("app-server process %d: timer slack = %v, want %v (the daemon's)", pid, got, tc.want)
				}
				if slices.Contains(marked, pid) {
					t.Errorf("app-server process %d inherited %s", pid, envTimerSlackRaised)
				}
			}
			if code := d.terminate(t, 30*time.Second); code != 0 {
				t.Errorf("exit code %d after SIGTERM, want 0", code)
			}
		})
	}
}

func slackOf(t *testing.T, pid int) time.Duration {
	t.Helper()
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/timerslack_ns")
	if err != nil {
		t.Fatal(err)
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Duration(ns)
}
