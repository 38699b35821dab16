package main

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/doctor"
	"github.com/gatewayd/gatewayd/internal/processtest"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
	"github.com/gatewayd/gatewayd/platforms/slack/slacktest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex"
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
	if got := pkg.Dependencies["@openai/codex"]; got != doctor.PinnedCodexVersion {
		t.Errorf("tools/package.json pins @openai/codex %q, doctor expects %q", got, doctor.PinnedCodexVersion)
	}
}

// doctorConfig writes a config for the real codex: with the fake provider
// when model is set, else a bare CODEX_HOME (no account, no provider).
func doctorConfig(t *testing.T, dir string, model *codextest.Model, extra map[string]any) string {
	t.Helper()
	return doctorConfigFor(t, codextest.CodexBinary(t), dir, model, extra)
}

// doctorConfigFor is doctorConfig with another codex.command.
func doctorConfigFor(t *testing.T, command, dir string, model *codextest.Model, extra map[string]any) string {
	t.Helper()
	codexCfg := map[string]any{"command": command, "home": codextest.Home(t), "cwd": filepath.Join(dir, "work")}
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
	for _, s := range append(secrets, telegramtest.Token, discordtest.Token, slacktest.BotToken, slacktest.AppToken, whoamiToken) {
		if strings.Contains(out+errOut, s) {
			t.Errorf("doctor printed a token:\n%s%s", out, errOut)
		}
	}
	return code, out
}

func failedLines(out string) []string { return linesWith(out, "✗") }

// linesWith returns the report's lines that start with mark (✓, ⚠ or ✗).
func linesWith(out, mark string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, mark) {
			lines = append(lines, l)
		}
	}
	return lines
}

// fakeVersion is what the wrapped codex claims to be: no real release.
const fakeVersion = "0.999.0"

// codexWrapper writes a shell script that answers `--version` as codex
// fakeVersion and runs appServer for `app-server` (the real binary's when
// appServer is ""), so the doctor meets the real app-server under another
// version. The real binary is laid out under the script's directory as
// npm installs it (bin/codex beside codex-resources/, where its bundled
// bubblewrap is): the lane profile grants codex.command's directory, and
// codex's sandbox re-executes the binary from where it runs.
func codexWrapper(t *testing.T, appServer string) string {
	t.Helper()
	dir := t.TempDir()
	binary := codextest.CodexBinary(t)
	real := filepath.Join(dir, "real", "bin", "codex")
	if err := os.MkdirAll(filepath.Dir(real), 0o755); err != nil {
		t.Fatal(err)
	}
	linkOrCopy(t, binary, real)
	resources := filepath.Join(codex.CodexDir(binary), "codex-resources")
	if err := os.Symlink(resources, filepath.Join(dir, "real", "codex-resources")); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(real, "'") {
		t.Skipf("codex path %q cannot be quoted for sh", real)
	}
	if appServer == "" {
		appServer = "exec '" + real + "' \"$@\""
	}
	script := "#!/bin/sh\n" +
		"if [ \"$1\" = --version ]; then echo 'codex-cli " + fakeVersion + "'; exit 0; fi\n" +
		"if [ \"$1\" = app-server ]; then\n" + appServer + "\nfi\n" +
		"exec '" + real + "' \"$@\"\n"
	path := filepath.Join(dir, "codex")
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

// linkOrCopy hard-links src to dst, or copies it across file systems.
func linkOrCopy(t *testing.T, src, dst string) {
	t.Helper()
	if os.Link(src, dst) == nil {
		return
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// refuseInitialize stands in for an app-server whose protocol gatewayd no
// longer fits: it answers the first request, initialize, with an error.
const refuseInitialize = `read -r line
id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
printf '{"id":%s,"error":{"code":-32602,"message":"unknown capability"}}\n' "$id"
exec cat >/dev/null`

// refuseCalls stands in for an app-server that initializes but no longer
// knows the other methods gatewayd calls: it answers every later request
// with "method not found".
const refuseCalls = `while read -r line; do
id=$(printf '%s' "$line" | sed -n 's/.*"id":\([0-9]*\).*/\1/p')
[ -n "$id" ] || continue
case "$line" in
*'"method":"initialize"'*) printf '{"id":%s,"result":{"userAgent":"gatewayd-doctor/0.999.0"}}\n' "$id" ;;
*) printf '{"id":%s,"error":{"code":-32601,"message":"method not found"}}\n' "$id" ;;
esac
done`

// binaryVersion is the version the codex binary prints.
func binaryVersion(t *testing.T, binary string) string {
	t.Helper()
	out, err := exec.Command(binary, "--version").Output()
	if err != nil {
		t.Fatalf("%s --version: %v", binary, err)
	}
	return doctor.CodexVersion(string(out))
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
	sl := slacktest.New(slacktest.Options{})
	defer sl.Close()
	mx := newWhoamiHomeserver(t)
	platforms := map[string]any{
		"telegram": map[string]any{"token": telegramtest.Token, "api_url": tg.URL, "allowed_users": []string{"1"}},
		"discord":  map[string]any{"token": discordtest.Token, "api_url": dc.URL(), "allowed_users": []string{"2"}},
		"slack": map[string]any{"bot_token": slacktest.BotToken, "app_token": slacktest.AppToken, "api_url": sl.APIURL(),
			"allowed_users": []string{"U2"}},
		"matrix": map[string]any{"homeserver": mx.URL, "access_token": whoamiToken, "allowed_users": []string{"@alice:example.org"}},
	}

	t.Run("all pass", func(t *testing.T) {
		code, out := runDoctor(t, doctorConfig(t, t.TempDir(), model, platforms))
		if code != cli.ExitOK || len(failedLines(out)) > 0 {
			t.Fatalf("exit %d, failed %q\n%s", code, failedLines(out), out)
		}
		version := binaryVersion(t, codextest.CodexBinary(t))
		if warned := linesWith(out, "⚠"); (version == doctor.PinnedCodexVersion) != (len(warned) == 0) {
			t.Errorf("codex %s (pinned %s), warnings %q", version, doctor.PinnedCodexVersion, warned)
		}
		for _, want := range []string{"config valid", "state dir", "database", "version " + version, "initialize answered",
			"answers model/list", "configured model provider", "lanes isolated", "telegram token accepted", "telegram allowlist", "discord token accepted",
			"discord allowlist", "slack bot token accepted", "slack Socket Mode connected", "slack allowlist",
			"matrix token accepted (@codex:example.org", "matrix allowlist", "is free", "All checks passed."} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
		if n := len(model.Requests()); n != 0 {
			t.Errorf("doctor sent %d model requests", n)
		}
	})

	// A codex newer than the pinned one whose app-server answers is a
	// warning naming both versions, and the doctor still passes.
	t.Run("another codex version", func(t *testing.T) {
		code, out := runDoctor(t, doctorConfigFor(t, codexWrapper(t, ""), t.TempDir(), model, nil))
		if code != cli.ExitOK || len(failedLines(out)) > 0 || !strings.Contains(out, "All checks passed.") {
			t.Fatalf("exit %d, failed %q\n%s", code, failedLines(out), out)
		}
		warned := linesWith(out, "⚠")
		want := "version " + fakeVersion + " (gatewayd is tested with " + doctor.PinnedCodexVersion + ")"
		if len(warned) != 1 || !strings.Contains(warned[0], want) {
			t.Errorf("warnings %q, want one with %q\n%s", warned, want, out)
		}
		for _, want := range []string{"initialize answered", "answers model/list", "configured model provider", "lanes isolated"} {
			if !strings.Contains(out, want) {
				t.Errorf("output lacks %q:\n%s", want, out)
			}
		}
	})

	// An app-server that refuses initialize fails the doctor, whatever
	// its version; the version itself stays a warning.
	t.Run("initialize refused", func(t *testing.T) {
		code, out := runDoctor(t, doctorConfigFor(t, codexWrapper(t, refuseInitialize), t.TempDir(), model, nil))
		failed := failedLines(out)
		if code != cli.ExitFailure || len(failed) != 1 || !strings.Contains(failed[0], "codex app-server did not start") ||
			!strings.Contains(failed[0], "unknown capability") {
			t.Fatalf("exit %d, failed %q, want 1 and only the app-server\n%s", code, failed, out)
		}
		if !strings.Contains(out, "fix: install @openai/codex@"+doctor.PinnedCodexVersion) {
			t.Errorf("the fix does not name the pinned codex:\n%s", out)
		}
		if len(linesWith(out, "⚠")) != 1 {
			t.Errorf("want the version warning:\n%s", out)
		}
	})

	// Initialize alone is not enough: the calls behind /model and the
	// account must be answered too.
	t.Run("calls refused", func(t *testing.T) {
		code, out := runDoctor(t, doctorConfigFor(t, codexWrapper(t, refuseCalls), t.TempDir(), model, nil))
		failed := strings.Join(failedLines(out), "\n")
		if code != cli.ExitFailure || !strings.Contains(out, "initialize answered") {
			t.Fatalf("exit %d, want 1 after initialize\n%s", code, out)
		}
		for _, want := range []string{"model/list: rpc error -32601", "account/read failed"} {
			if !strings.Contains(failed, want) {
				t.Errorf("failed lines lack %q:\n%s", want, out)
			}
		}
	})

	t.Run("no account", func(t *testing.T) {
		code, out := runDoctor(t, doctorConfig(t, t.TempDir(), nil, nil))
		failed := failedLines(out)
		if code != cli.ExitFailure || len(failed) != 1 || !strings.Contains(failed[0], "no account") {
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
			"slack": map[string]any{"bot_token": "xoxb-wrong-slack-secret", "app_token": "xapp-wrong-slack-secret", "api_url": sl.APIURL(),
				"allowed_users": []string{"U2"}},
			"matrix": map[string]any{"homeserver": mx.URL, "access_token": "wrong-matrix-secret", "allowed_users": []string{"@alice:example.org"}},
			"api":    map[string]any{"listen": foreign.Addr().String()},
		})
		code, out := runDoctor(t, cfgFile, secret, "wrong-discord-secret", "wrong-slack-secret", "wrong-matrix-secret")
		failed := strings.Join(failedLines(out), "\n")
		for _, want := range []string{"telegram token refused", "discord token refused", "slack bot token refused", "slack app token refused",
			"matrix token refused", "in use by another program"} {
			if !strings.Contains(failed, want) {
				t.Errorf("failed lines lack %q:\n%s", want, out)
			}
		}
		if code != cli.ExitFailure {
			t.Errorf("exit %d, want 1", code)
		}
	})
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
	withDatabase := func(t *testing.T, isolation string, extra ...map[string]any) string {
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
		cfg := map[string]any{"codex": map[string]any{
			"command": codextest.CodexBinary(t), "home": codextest.Home(t), "cwd": filepath.Join(dir, "work"),
			"args": codextest.Args(model.URL), "isolation": isolation}}
		for _, e := range extra {
			maps.Copy(cfg, e)
		}
		return doctorConfig(t, dir, model, cfg)
	}

	t.Run("lanes", func(t *testing.T) {
		code, out := runDoctor(t, withDatabase(t, "lanes"))
		if code != cli.ExitOK || !strings.Contains(out, "✓ lanes isolated") {
			t.Fatalf("exit %d, want 0 and ✓ lanes isolated:\n%s", code, out)
		}
		if !strings.Contains(out, "✓ git boundary: a lane's command could not write its worktree's .git") {
			t.Errorf("doctor did not prove the git boundary:\n%s", out)
		}
	})
	// A secret file under /etc (which the sandbox lets commands read) is
	// probed with its directory and named on the line.
	t.Run("secret file", func(t *testing.T) {
		keyFile := filepath.Join(codextest.EtcDir(t), "voice.key")
		if err := os.WriteFile(keyFile, []byte("sk-voice"), 0o600); err != nil {
			t.Fatal(err)
		}
		code, out := runDoctor(t, withDatabase(t, "lanes", map[string]any{"voice": map[string]any{"api_key_file": keyFile}}), "sk-voice")
		if code != cli.ExitOK || !strings.Contains(out, "✓ lanes isolated") || !strings.Contains(out, keyFile) {
			t.Fatalf("exit %d, want 0 and ✓ lanes isolated naming %s:\n%s", code, keyFile, out)
		}
	})
	t.Run("none", func(t *testing.T) {
		code, out := runDoctor(t, withDatabase(t, "none"))
		failed := failedLines(out)
		if code != cli.ExitFailure || len(failed) != 1 || !strings.Contains(failed[0], "lanes are not isolated (codex.isolation: none)") ||
			!strings.Contains(failed[0], "gatewayd.db") {
			t.Fatalf("exit %d, failed %q, want 1 and only isolation, naming the database:\n%s", code, failed, out)
		}
		if !strings.Contains(out, "fix: set codex.isolation: lanes") {
			t.Errorf("the fix is not named:\n%s", out)
		}
	})
}
