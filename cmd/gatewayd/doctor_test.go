package main

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/internal/processtest"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

func TestPinnedCodexVersionMatchesTools(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "tools", "package.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		t.Fatal(err)
	}
	if got := pkg.Dependencies["@openai/codex"]; got != pinnedCodexVersion {
		t.Errorf("tools/package.json pins @openai/codex %q, doctor expects %q", got, pinnedCodexVersion)
	}
}

func TestCodexVersionParse(t *testing.T) {
	for in, want := range map[string]string{"codex-cli 0.169.0\n": "0.169.0", "": "", "0.170.1": "0.170.1"} {
		if got := codexVersion(in); got != want {
			t.Errorf("codexVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

// doctorConfig writes a config for the real codex: with the fake provider
// when model is set, else a bare CODEX_HOME (no account, no provider).
func doctorConfig(t *testing.T, dir string, model *codextest.Model, extra map[string]any) string {
	t.Helper()
	codexCfg := map[string]any{"command": codextest.CodexBinary(t), "home": codextest.Home(t), "cwd": filepath.Join(dir, "work")}
	if model != nil {
		codexCfg["args"] = codextest.Args(model.URL)
	}
	cfg := map[string]any{"state_dir": filepath.Join(dir, "state"), "codex": codexCfg, "api": map[string]any{"listen": freeAddr(t)}}
	for k, v := range extra {
		cfg[k] = v
	}
	return writeProcessConfig(t, dir, cfg)
}

// runDoctor runs `gatewayd doctor` and checks that no token leaked.
func runDoctor(t *testing.T, cfgFile string, secrets ...string) (int, string) {
	t.Helper()
	code, out, errOut := runCLI(t, "", "doctor", "--config", cfgFile)
	for _, s := range append(secrets, telegramtest.Token, discordtest.Token) {
		if strings.Contains(out+errOut, s) {
			t.Errorf("doctor printed a token:\n%s%s", out, errOut)
		}
	}
	return code, out
}

func failedLines(out string) []string {
	var failed []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "✗") {
			failed = append(failed, l)
		}
	}
	return failed
}

// With the fake provider and both platform fakes every check passes; a
// bare CODEX_HOME fails the account check with the fix and exits 1.
func TestDoctorWithTheRealCodex(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the codex app-server")
	}
	cleanEnv(t)
	t.Setenv(codextest.APIKeyEnv, codextest.APIKey)
	model := codextest.NewModel(t)
	tg := telegramtest.New(t)
	dc := discordtest.New("c1")
	defer dc.Close()
	platforms := map[string]any{
		"telegram": map[string]any{"token": telegramtest.Token, "api_url": tg.URL, "allowed_users": []string{"1"}},
		"discord":  map[string]any{"token": discordtest.Token, "api_url": dc.URL(), "allowed_users": []string{"2"}},
	}

	t.Run("all pass", func(t *testing.T) {
		code, out := runDoctor(t, doctorConfig(t, t.TempDir(), model, platforms))
		if code != exitOK || len(failedLines(out)) > 0 {
			t.Fatalf("exit %d, failed %q\n%s", code, failedLines(out), out)
		}
		for _, want := range []string{"config valid", "state dir", "database", "version 0.169.0", "initialize answered",
			"configured model provider", "lanes isolated", "telegram token accepted", "telegram allowlist", "discord token accepted",
			"discord allowlist", "is free", "All checks passed."} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if n := len(model.Requests()); n != 0 {
			t.Errorf("doctor sent %d model requests", n)
		}
	})

	t.Run("no account", func(t *testing.T) {
		code, out := runDoctor(t, doctorConfig(t, t.TempDir(), nil, nil))
		failed := failedLines(out)
		if code != exitFailure || len(failed) != 1 || !strings.Contains(failed[0], "no account") {
			t.Fatalf("exit %d, failed %q, want 1 and only the account\n%s", code, failed, out)
		}
		if !strings.Contains(out, "fix: run `codex login --device-auth` as the service user") ||
			!strings.Contains(out, "CODEX_HOME/config.toml") {
			t.Errorf("the fix is not named:\n%s", out)
		}
	})

	t.Run("refused tokens and a foreign listener", func(t *testing.T) {
		const secret = "999:wrong-secret-4711"
		foreign, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer foreign.Close()
		go http.Serve(foreign, http.NotFoundHandler())
		dir := t.TempDir()
		cfgFile := doctorConfig(t, dir, model, map[string]any{
			"telegram": map[string]any{"token": secret, "api_url": tg.URL, "allowed_users": []string{"1"}},
			"discord":  map[string]any{"token": "wrong-discord-secret", "api_url": dc.URL(), "allowed_users": []string{"2"}},
			"api":      map[string]any{"listen": foreign.Addr().String()},
		})
		code, out := runDoctor(t, cfgFile, secret, "wrong-discord-secret")
		failed := strings.Join(failedLines(out), "\n")
		for _, want := range []string{"telegram token refused", "discord token refused", "in use by another program"} {
			if !strings.Contains(failed, want) {
				t.Errorf("failed lines lack %q:\n%s", want, out)
			}
		}
		if code != exitFailure {
			t.Errorf("exit %d, want 1", code)
		}
	})
}

// A listener that answers /healthz as gatewayd does (ready or not) passes.
func TestDoctorListenHeldByGatewayd(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
		w.Write([]byte(`{"status":"unavailable","reason":"Codex is not logged in"}`))
	}))
	defer srv.Close()
	var out strings.Builder
	d := &doctor{out: &out, http: srv.Client()}
	d.checkListen(t.Context(), strings.TrimPrefix(srv.URL, "http://"))
	if d.failed != 0 || !strings.Contains(out.String(), "held by a running gatewayd (/healthz 503 unavailable: Codex is not logged in)") {
		t.Errorf("failed %d:\n%s", d.failed, out.String())
	}
}

// doctor's isolation line probes through the real app-server's sandbox:
// with codex.isolation at its default a command under the lane profile
// writes its own directory and cannot read the database (✓ lanes
// isolated); with none the same probe reads it (✗, with the fix).
func TestDoctorProbesLaneIsolation(t *testing.T) {
	processtest.SkipWhenShort(t, "starts the codex app-server and runs commands in its sandbox")
	cleanEnv(t)
	t.Setenv(codextest.APIKeyEnv, codextest.APIKey)
	model := codextest.NewModel(t)
	withDatabase := func(t *testing.T, isolation string) string {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "state"), 0o700); err != nil {
			t.Fatal(err)
		}
		st, err := store.Open(context.Background(), filepath.Join(dir, "state", "gatewayd.db"), store.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		return doctorConfig(t, dir, model, map[string]any{"codex": map[string]any{
			"command": codextest.CodexBinary(t), "home": codextest.Home(t), "cwd": filepath.Join(dir, "work"),
			"args": codextest.Args(model.URL), "isolation": isolation}})
	}

	t.Run("lanes", func(t *testing.T) {
		code, out := runDoctor(t, withDatabase(t, "lanes"))
		if code != exitOK || !strings.Contains(out, "✓ lanes isolated") {
			t.Fatalf("exit %d, want 0 and ✓ lanes isolated:\n%s", code, out)
		}
	})
	t.Run("none", func(t *testing.T) {
		code, out := runDoctor(t, withDatabase(t, "none"))
		failed := failedLines(out)
		if code != exitFailure || len(failed) != 1 || !strings.Contains(failed[0], "lanes are not isolated (codex.isolation: none)") ||
			!strings.Contains(failed[0], "gatewayd.db") {
			t.Fatalf("exit %d, failed %q, want 1 and only isolation, naming the database:\n%s", code, failed, out)
		}
		if !strings.Contains(out, "fix: set codex.isolation: lanes") {
			t.Errorf("the fix is not named:\n%s", out)
		}
	})
}
