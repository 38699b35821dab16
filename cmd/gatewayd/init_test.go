package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/doctor"
)

const (
	initGoodToken = "4242:GOOD-token-for-init-tests"
	initBadToken  = "4242:BAD-token-for-init-tests"
)

// initFakeTelegram answers getMe (200 for initGoodToken, 401 otherwise).
// The interactive tests, which read updates, use telegramtest.
type initFakeTelegram struct {
	*httptest.Server
	mu    sync.Mutex
	getMe int
}

func newInitFakeTelegram(t *testing.T) *initFakeTelegram {
	t.Helper()
	f := &initFakeTelegram{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		tok, method, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/bot"), "/")
		if !ok || tok != initGoodToken {
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]any{"ok": false, "error_code": 401, "description": "Unauthorized"})
			return
		}
		switch method {
		case "getMe":
			f.getMe++
			json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": map[string]any{"id": 1, "is_bot": true, "username": "init_test_bot"}})
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

// initEnv isolates the environment: no GATEWAYD_* variables, a temporary
// HOME, and a PATH without codex (so the doctor does not start one).
func initEnv(t *testing.T) string {
	t.Helper()
	dir := cleanEnv(t)
	t.Setenv("GATEWAYD_CONFIG", "")
	os.Unsetenv("GATEWAYD_CONFIG")
	t.Setenv("PATH", filepath.Join(dir, "no-bin"))
	return dir
}

// initFakeCodex puts a codex on PATH that answers --version and, when
// loggedIn, `login status` with exit 0; its app-server does not start.
func initFakeCodex(t *testing.T, dir string, loggedIn bool) {
	t.Helper()
	bin := filepath.Join(dir, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	status := "exit 1"
	if loggedIn {
		status = "echo 'Logged in using an API key - sk-SECRET'; exit 0"
	}
	script := "#!/bin/sh\ncase \"$1\" in\n--version) echo 'codex-cli " + doctor.PinnedCodexVersion + "'; exit 0;;\n" +
		"login) " + status + ";;\nesac\necho 'not here' >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(bin, "codex"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin)
}

func initSecretFile(t *testing.T, dir, name, secret string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func initFileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

func initReadFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestInitFlagsWritesConfig(t *testing.T) {
	dir := initEnv(t)
	initFakeCodex(t, dir, true)
	tg := newInitFakeTelegram(t)
	project := filepath.Join(dir, "proj")
	if err := os.Mkdir(project, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "etc", "gatewayd.yaml")
	tokFile := initSecretFile(t, dir, "tg.token", initGoodToken)
	code, out, errOut := runCLI(t, "", "init", "--yes", "--config", cfg, "--telegram-token-file", tokFile,
		"--telegram-api-url", tg.URL, "--allow-user", "4242", "--allow-user", "telegram:77", "--project", "web="+project)
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(out+errOut, "GOOD-token") || strings.Contains(out+errOut, "sk-SECRET") {
		t.Fatalf("the token was printed:\n%s\n%s", out, errOut)
	}
	t.Logf("stdout:\n%s", out)
	envFile := filepath.Join(dir, "etc", "env")
	if m := initFileMode(t, cfg); m != 0o640 {
		t.Errorf("config mode %04o, want 0640", m)
	}
	if m := initFileMode(t, envFile); m != 0o600 {
		t.Errorf("env mode %04o, want 0600", m)
	}
	yaml := initReadFile(t, cfg)
	for _, want := range []string{"deploy/gatewayd.yaml", `allowed_users: ["4242", "77"]`, `api_url: "` + tg.URL + `"`,
		`"web": "` + project + `"`} {
		if !strings.Contains(yaml, want) {
			t.Errorf("config lacks %q:\n%s", want, yaml)
		}
	}
	if strings.Contains(yaml, "GOOD-token") || strings.Contains(yaml, "discord") {
		t.Errorf("config:\n%s", yaml)
	}
	env := initReadFile(t, envFile)
	if !strings.Contains(env, "\nGATEWAYD_TELEGRAM_TOKEN="+initGoodToken+"\n") || strings.Contains(env, "DISCORD") {
		t.Errorf("env file:\n%s", env)
	}
	for _, want := range []string{"Telegram: token accepted (@init_test_bot)", "Config valid", "✓ config valid (" + cfg + ")",
		"✓ telegram token accepted (@init_test_bot)", "Codex: logged in"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	// The written config is what check-config accepts with the env file's token.
	t.Setenv("GATEWAYD_TELEGRAM_TOKEN", initGoodToken)
	if _, err := (&cli.Flags{Config: cfg}).Load(); err != nil {
		t.Errorf("written config does not load: %v", err)
	}
}

func TestInitFlagsBadToken(t *testing.T) {
	dir := initEnv(t)
	tg := newInitFakeTelegram(t)
	cfg := filepath.Join(dir, "gatewayd.yaml")
	tokFile := initSecretFile(t, dir, "tg.token", initBadToken)
	code, out, errOut := runCLI(t, "", "init", "--yes", "--config", cfg, "--telegram-token-file", tokFile,
		"--telegram-api-url", tg.URL, "--allow-user", "4242")
	if code != 2 {
		t.Fatalf("exit %d, want 2\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, "telegram rejected the bot token") || !strings.Contains(errOut, "401") {
		t.Errorf("stderr does not name telegram's refusal:\n%s", errOut)
	}
	if strings.Contains(out+errOut, "BAD-token") {
		t.Errorf("the token was printed:\n%s\n%s", out, errOut)
	}
	for _, p := range []string{cfg, filepath.Join(dir, "env")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s written after a refused token", p)
		}
	}
}

func TestInitRefusesOverwrite(t *testing.T) {
	dir := initEnv(t)
	tg := newInitFakeTelegram(t)
	cfg := filepath.Join(dir, "gatewayd.yaml")
	if err := os.WriteFile(cfg, []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tokFile := initSecretFile(t, dir, "tg.token", initGoodToken)
	args := []string{"init", "--yes", "--config", cfg, "--telegram-token-file", tokFile, "--telegram-api-url", tg.URL, "--allow-user", "4242"}
	code, out, errOut := runCLI(t, "", args...)
	if code != 2 || !strings.Contains(errOut, "refusing to overwrite "+cfg) || !strings.Contains(errOut, "--force") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if got := initReadFile(t, cfg); got != "# mine\n" {
		t.Errorf("config changed:\n%s", got)
	}
	code, out, errOut = runCLI(t, "", append(args, "--force")...)
	if code != 0 {
		t.Fatalf("--force: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if got := initReadFile(t, cfg); !strings.Contains(got, `allowed_users: ["4242"]`) {
		t.Errorf("--force did not write the config:\n%s", got)
	}
}

func TestInitUsageErrors(t *testing.T) {
	dir := initEnv(t)
	tg := newInitFakeTelegram(t)
	tokFile := initSecretFile(t, dir, "tg.token", initGoodToken)
	dcFile := initSecretFile(t, dir, "dc.token", "discord-token")
	cfg := filepath.Join(dir, "gatewayd.yaml")
	base := []string{"init", "--yes", "--config", cfg, "--telegram-api-url", tg.URL}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing project dir", []string{"--telegram-token-file", tokFile, "--allow-user", "1", "--project", "x=" + filepath.Join(dir, "nope")},
			"--project x=" + filepath.Join(dir, "nope") + ": directory"},
		{"project not name=dir", []string{"--telegram-token-file", tokFile, "--allow-user", "1", "--project", "x"}, "not name=dir"},
		{"no token", []string{"--allow-user", "1"}, "give --telegram-token-file or --discord-token-file"},
		{"no allowlist", []string{"--telegram-token-file", tokFile}, "--allow-user is required for Telegram"},
		{"ambiguous id", []string{"--telegram-token-file", tokFile, "--discord-token-file", dcFile, "--allow-user", "1"}, "say telegram:1 or discord:1"},
		{"bad id", []string{"--telegram-token-file", tokFile, "--allow-user", "alice"}, "user ids are numbers"},
		{"token on the command line", []string{"--telegram-token", initGoodToken}, "flag provided but not defined"},
		{"unreadable token file", []string{"--telegram-token-file", filepath.Join(dir, "missing"), "--allow-user", "1"}, "cannot read"},
		{"positional", []string{"extra"}, "init takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append(append([]string{}, base...), tt.args...)...)
			if code != 2 || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, want 2 with %q\nstdout:\n%s\nstderr:\n%s", code, tt.want, out, errOut)
			}
			if strings.Contains(errOut, "GOOD-token") {
				t.Errorf("token printed: %s", errOut)
			}
			if _, err := os.Stat(cfg); err == nil {
				t.Errorf("config written")
			}
		})
	}
}

func TestInitDiscordFlags(t *testing.T) {
	dir := initEnv(t)
	const dcToken = "discord.GOOD.token"
	dc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if (r.URL.Path != "/api/v10/users/@me" && r.URL.Path != "/api/v9/users/@me") || r.Header.Get("Authorization") != "Bot "+dcToken {
			w.WriteHeader(http.StatusUnauthorized)
			json.NewEncoder(w).Encode(map[string]any{"message": "401: Unauthorized", "code": 0})
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"id": "1", "username": "initbot"})
	}))
	defer dc.Close()
	cfg := filepath.Join(dir, "gatewayd.yaml")
	bad := initSecretFile(t, dir, "bad", "discord.BAD.token")
	code, out, errOut := runCLI(t, "", "init", "--yes", "--config", cfg, "--discord-token-file", bad, "--discord-api-url", dc.URL, "--allow-user", "99")
	if code != 2 || !strings.Contains(errOut, "discord rejected the bot token") || strings.Contains(out+errOut, "BAD") {
		t.Fatalf("bad token: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	good := initSecretFile(t, dir, "good", dcToken)
	code, out, errOut = runCLI(t, "", "init", "--yes", "--config", cfg, "--discord-token-file", good, "--discord-api-url", dc.URL, "--allow-user", "discord:99")
	if code != 0 || strings.Contains(out+errOut, "GOOD") {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if yaml := initReadFile(t, cfg); !strings.Contains(yaml, "discord:\n  api_url: \""+dc.URL+"\"\n  allowed_users: [\"99\"]") || strings.Contains(yaml, "telegram") {
		t.Errorf("config:\n%s", yaml)
	}
	if env := initReadFile(t, filepath.Join(dir, "env")); !strings.Contains(env, "\nGATEWAYD_DISCORD_TOKEN="+dcToken+"\n") {
		t.Errorf("env:\n%s", env)
	}
}
