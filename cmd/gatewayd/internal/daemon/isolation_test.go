package daemon

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
// config's directory and the token files, absolute and once each, and
// none inside another (the token file beside the config is in its
// directory's mask); with isolation off the app-server gets codex.args
// alone.
func TestDeniedToLanesAndCodexArgs(t *testing.T) {
	dir := t.TempDir()
	cfg := &config.Config{File: filepath.Join(dir, "etc", "gatewayd.yaml"), StateDir: filepath.Join(dir, "state"),
		Codex: config.Codex{Command: "/bin/true", Args: []string{"-c", "x=1"}, Cwd: filepath.Join(dir, "state"),
			Home: filepath.Join(dir, "home"), Isolation: config.IsolationLanes, Sandbox: "workspace-write"},
		Telegram: config.Telegram{TokenFile: filepath.Join(dir, "etc", "tg.token")}}
	want := []string{filepath.Join(dir, "state"), filepath.Join(dir, "etc"), filepath.Join(dir, "home")}
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

// TestDeniedToLanesCoversEverySecretFile walks the
// configuration's keys: every key ending in _file, and a webhook's
// secret_file, set to a file in a directory of its own, is denied with
// that directory — so a *_file key added later cannot be left readable.
// A secret file directly in a top-level directory is denied alone.
func TestDeniedToLanesCoversEverySecretFile(t *testing.T) {
	dir := t.TempDir()
	var yaml strings.Builder
	var files []string
	secret := func(name string) string {
		sub := filepath.Join(dir, strings.ReplaceAll(name, ".", "-"))
		if err := os.MkdirAll(sub, 0o700); err != nil {
			t.Fatal(err)
		}
		f := filepath.Join(sub, "secret")
		content := "s3cret\n"
		switch name { // Slack's tokens are checked for their prefixes
		case "slack.bot_token_file":
			content = "xoxb-s3cret\n"
		case "slack.app_token_file":
			content = "xapp-s3cret\n"
		}
		if err := os.WriteFile(f, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		return f
	}
	for _, k := range config.Keys() {
		if strings.HasSuffix(k, "_file") {
			fmt.Fprintf(&yaml, "%s: %q\n", k, secret(k))
		}
	}
	if len(files) < 5 {
		t.Fatalf("walked %d *_file keys; the token, DSN and API key files are 5", len(files))
	}
	// What the secrets need beside them to load (who may talk, which store).
	fmt.Fprintf(&yaml, "state_dir: %q\ntelegram.allowed_users: [1]\ndiscord.allowed_users: [\"1\"]\nstore.driver: postgres\n", filepath.Join(dir, "state"))
	fmt.Fprintf(&yaml, "slack.allowed_users: [U1]\nmatrix.homeserver: \"https://m.example.org\"\nmatrix.allowed_users: [\"@a:example.org\"]\n")
	fmt.Fprintf(&yaml, "webhooks.hooks: {ci: {secret_file: %q, lane: \"v1:api:ci\", template: \"x\"}}\n", secret("webhooks.hooks.ci"))
	cfgFile := filepath.Join(dir, "etc", "gatewayd.yaml")
	if err := os.MkdirAll(filepath.Dir(cfgFile), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgFile, []byte(dottedToNested(yaml.String())), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(config.Options{File: cfgFile, Env: os.Environ()})
	if err != nil {
		t.Fatalf("load a config setting every *_file key: %v", err)
	}
	denied := DeniedToLanes(cfg)
	for _, f := range files {
		if !slices.Contains(denied, filepath.Dir(f)) {
			t.Errorf("the directory of %s is not denied to lanes: %q", f, denied)
		}
	}
	cfg.Telegram.TokenFile = "/tg.token"
	if got := DeniedToLanes(cfg); !slices.Contains(got, "/tg.token") || slices.Contains(got, "/") {
		t.Errorf("a token file in / : denied %q; want the file, not /", got)
	}
}

// dottedToNested turns "a.b.c: v" lines into nested YAML maps, sorted so
// each section is written once.
func dottedToNested(flat string) string {
	var b strings.Builder
	var prev []string
	lines := strings.Split(strings.TrimSpace(flat), "\n")
	slices.Sort(lines)
	for _, line := range lines {
		name, value, _ := strings.Cut(line, ": ")
		parts := strings.Split(name, ".")
		same := 0
		for same < len(prev) && same < len(parts)-1 && prev[same] == parts[same] {
			same++
		}
		for i := same; i < len(parts)-1; i++ {
			fmt.Fprintf(&b, "%s%s:\n", strings.Repeat("  ", i), parts[i])
		}
		fmt.Fprintf(&b, "%s%s: %s\n", strings.Repeat("  ", len(parts)-1), parts[len(parts)-1], value)
		prev = parts[:len(parts)-1]
	}
	return b.String()
}
