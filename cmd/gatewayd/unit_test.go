package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/daemon"
	"github.com/gatewayd/gatewayd/config"
)

const unitFile = "../../deploy/systemd/gatewayd.service"

// unitSettings reads the [Service] settings of the shipped unit.
func unitSettings(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(line, "#") {
			out[k] = v
		}
	}
	return out
}

func TestUnitStopTimeoutCoversTheDrain(t *testing.T) {
	cleanEnv(t)
	t.Setenv("GATEWAYD_CODEX_COMMAND", "/bin/true")
	cfg, err := config.Load(config.Options{File: "../../deploy/gatewayd.yaml", Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	u := unitSettings(t)
	stop, err := time.ParseDuration(u["TimeoutStopSec"])
	if err != nil {
		t.Fatalf("TimeoutStopSec %q: %v", u["TimeoutStopSec"], err)
	}
	// After the drain: interrupts (5s), their completion (10s), outbox flush
	// (10s) and HTTP stop (5s) in the gateway and api, then the app-server.
	const afterDrain = 30 * time.Second
	if need := cfg.Shutdown.DrainTimeout + afterDrain + daemon.CloseTimeout; stop <= need {
		t.Errorf("TimeoutStopSec=%v, must exceed drain %v + %v + app-server close %v", stop,
			cfg.Shutdown.DrainTimeout, afterDrain, daemon.CloseTimeout)
	}
	for k, want := range map[string]string{
		"Type": "notify", "Restart": "on-failure", "StateDirectory": "gatewayd", "KillMode": "mixed",
		"EnvironmentFile": "-/etc/gatewayd/env", "User": "gatewayd", "RestartPreventExitStatus": "2",
		"NoNewPrivileges": "yes", "ProtectSystem": "strict", "PrivateTmp": "yes",
		// Go exits 2 on a panic or SIGABRT; only a crash traceback keeps
		// that apart from the configuration error RestartPreventExitStatus=2.
		"Environment": "GOTRACEBACK=crash",
		// daemonTimerSlack, so the daemon need not re-execute to get it.
		"TimerSlackNSec": "1ms",
	} {
		if u[k] != want {
			t.Errorf("%s=%q, want %q", k, u[k], want)
		}
	}
	if u["WatchdogSec"] == "" {
		t.Error("no WatchdogSec")
	}
}

// systemd-analyze verify accepts the unit (with ExecStart pointed at a
// binary that exists here).
func TestUnitVerifies(t *testing.T) {
	sa, err := exec.LookPath("systemd-analyze")
	if err != nil {
		t.Skip("systemd-analyze not installed")
	}
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	unit := filepath.Join(t.TempDir(), "gatewayd.service")
	body := strings.ReplaceAll(string(b), "/usr/local/bin/gatewayd", "/bin/true")
	if err := os.WriteFile(unit, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(sa, "verify", unit).CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// The unit leaves codex's sandbox the namespaces lane isolation is built
// on, keeps the state directory and the config directory closed, and its
// layout is the one the isolation denies to lanes (the config's directory
// holds the environment file).
func TestUnitKeepsLaneIsolationWorking(t *testing.T) {
	u := unitSettings(t)
	for _, k := range []string{"RestrictNamespaces", "PrivateUsers"} {
		if v, set := u[k]; set {
			t.Errorf("%s=%s: bubblewrap then cannot build a lane's sandbox and every command fails", k, v)
		}
	}
	for k, want := range map[string]string{"StateDirectoryMode": "0700", "ConfigurationDirectoryMode": "0750", "UMask": "0077"} {
		if u[k] != want {
			t.Errorf("%s=%q, want %q", k, u[k], want)
		}
	}
	exec := strings.Fields(u["ExecStart"])
	if len(exec) != 4 || exec[2] != "--config" {
		t.Fatalf("ExecStart=%q, want <binary> run --config <file>", u["ExecStart"])
	}
	cfgFile := exec[3]
	envFile := strings.TrimPrefix(u["EnvironmentFile"], "-")
	if filepath.Dir(envFile) != filepath.Dir(cfgFile) {
		t.Errorf("EnvironmentFile %s is not beside the config %s: lane isolation denies the config's directory only", envFile, cfgFile)
	}
}

// The unit bounds the service's memory, tasks and CPU, keeps
// running when the OOM killer ends one lane's command, and trips its task
// limit before the per-user process limit the app-server gets
// (codex.max_processes), which would fail the daemon's own threads too.
func TestUnitBoundsResources(t *testing.T) {
	u := unitSettings(t)
	for k, want := range map[string]string{"MemoryMax": "75%", "OOMPolicy": "continue", "TasksMax": "4096", "CPUQuota": "400%"} {
		if u[k] != want {
			t.Errorf("%s=%q, want %q", k, u[k], want)
		}
	}
	tasks, err := strconv.Atoi(u["TasksMax"])
	if err != nil {
		t.Fatalf("TasksMax=%q: %v", u["TasksMax"], err)
	}
	if tasks >= config.DefaultCodexMaxProcesses {
		t.Errorf("TasksMax=%d is not below codex.max_processes' default %d", tasks, config.DefaultCodexMaxProcesses)
	}
}
