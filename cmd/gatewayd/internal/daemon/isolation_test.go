package daemon

import (
	"path/filepath"
	"slices"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatewayd/gatewayd/config"
)

// Each configuration that leaves lanes able to read beyond their own
// directories says so once at start, naming the key; the default is quiet.
func TestWarnIsolationNamesTheKey(t *testing.T) {
	tests := []struct {
		name                         string
		isolation, sandbox, approval string
		event, key                   string
	}{
		{"default", "lanes", "workspace-write", "never", "", ""},
		{"read-only", "lanes", "read-only", "never", "", ""},
		{"none", "none", "workspace-write", "never", "isolation.off", "codex.isolation"},
		{"danger-full-access", "lanes", "danger-full-access", "never", "isolation.off", "codex.sandbox"},
		{"chat approvals", "lanes", "workspace-write", "chat", "isolation.partial", "codex.approvals"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			cfg := &config.Config{Codex: config.Codex{Isolation: tt.isolation, Sandbox: tt.sandbox, Approvals: tt.approval}}
			warnIsolation(cfg, zap.New(core))
			all := logs.All()
			if tt.event == "" {
				if len(all) != 0 {
					t.Fatalf("logged %v, want nothing", all)
				}
				return
			}
			if len(all) != 1 || all[0].Message != tt.event || all[0].Level != zapcore.WarnLevel || all[0].ContextMap()["key"] != tt.key {
				t.Fatalf("logged %v, want one warning %s naming %s", all, tt.event, tt.key)
			}
		})
	}
}

// What is denied to lanes: the state dir, codex.cwd, CODEX_HOME, the
// config's directory and the token files, absolute and once each; with
// isolation off the app-server gets codex.args alone.
func TestDeniedToLanesAndCodexArgs(t *testing.T) {
	dir := t.TempDir()
	cfg := &config.Config{File: filepath.Join(dir, "etc", "gatewayd.yaml"), StateDir: filepath.Join(dir, "state"),
		Codex: config.Codex{Command: "/bin/true", Args: []string{"-c", "x=1"}, Cwd: filepath.Join(dir, "state"),
			Home: filepath.Join(dir, "home"), Isolation: config.IsolationLanes, Sandbox: "workspace-write"},
		Telegram: config.Telegram{TokenFile: filepath.Join(dir, "etc", "tg.token")}}
	want := []string{filepath.Join(dir, "state"), filepath.Join(dir, "etc"), filepath.Join(dir, "home"), filepath.Join(dir, "etc", "tg.token")}
	if got := DeniedToLanes(cfg); !slices.Equal(got, want) {
		t.Errorf("DeniedToLanes = %q, want %q", got, want)
	}
	args, err := CodexArgs(cfg)
	if err != nil || len(args) <= 2 || !slices.Equal(args[:2], cfg.Codex.Args) {
		t.Errorf("isolated CodexArgs = %q, %v; want codex.args then the profile", args, err)
	}
	cfg.Codex.Isolation = config.IsolationNone
	if args, err := CodexArgs(cfg); err != nil || !slices.Equal(args, cfg.Codex.Args) {
		t.Errorf("unisolated CodexArgs = %q, %v; want codex.args alone", args, err)
	}
}
