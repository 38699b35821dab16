package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/platforms/slack/slacktest"
)

// `gatewayd init` for Slack and Matrix, mirroring the Telegram and Discord
// cases of init_test.go.

func TestInitSlackFlags(t *testing.T) {
	dir := initEnv(t)
	initFakeCodex(t, dir, true)
	sl := slacktest.New(slacktest.Options{})
	defer sl.Close()
	cfg := filepath.Join(dir, "gatewayd.yaml")
	bot, app := initSecretFile(t, dir, "bot", slacktest.BotToken), initSecretFile(t, dir, "app", slacktest.AppToken)
	run := func(botFile, appFile string, extra ...string) (int, string, string) {
		args := append([]string{"init", "--yes", "--force", "--config", cfg, "--slack-bot-token-file", botFile,
			"--slack-app-token-file", appFile, "--slack-api-url", strings.TrimSuffix(sl.APIURL(), "/")}, extra...)
		return runCLI(t, "", args...)
	}

	badBot := initSecretFile(t, dir, "badbot", "xoxb-BAD-slack-secret")
	code, out, errOut := run(badBot, app, "--allow-user", "U2")
	if code != 2 || !strings.Contains(errOut, "slack rejected the bot token") || !strings.Contains(errOut, "slack.bot_token refused") {
		t.Fatalf("bad bot token: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	badApp := initSecretFile(t, dir, "badapp", "xapp-BAD-slack-secret")
	code, out, errOut = run(bot, badApp, "--allow-user", "U2")
	if code != 2 || !strings.Contains(errOut, "slack rejected the app-level token") || !strings.Contains(errOut, "slack.app_token refused") {
		t.Fatalf("bad app token: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	// The tokens swapped: the prefixes tell before Slack is asked.
	code, out, errOut = run(app, bot, "--allow-user", "U2")
	if code != 2 || !strings.Contains(errOut, "does not hold a bot token (xoxb-") {
		t.Fatalf("swapped tokens: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, p := range []string{cfg, filepath.Join(dir, "env")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s written after a refused token", p)
		}
	}

	code, out, errOut = run(bot, app, "--allow-user", "U2") // the one platform: no slack: needed
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, s := range []string{"BAD-slack-secret", slacktest.BotToken, slacktest.AppToken} {
		if strings.Contains(out+errOut, s) {
			t.Fatalf("a token was printed:\n%s\n%s", out, errOut)
		}
	}
	for _, want := range []string{"Slack: bot token accepted (@codex in Fake)", "Slack: app-level token accepted",
		"✓ slack bot token accepted", "✓ slack Socket Mode connected (app " + slacktest.AppID, "✓ slack allowlist: 1 user(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	yaml := initReadFile(t, cfg)
	if !strings.Contains(yaml, "slack:\n  api_url: \""+sl.APIURL()+"\"\n  allowed_users: [\"U2\"]") ||
		strings.Contains(yaml, "telegram") || strings.Contains(yaml, "xoxb-") || !strings.Contains(yaml, "GATEWAYD_SLACK_BOT_TOKEN / GATEWAYD_SLACK_APP_TOKEN") {
		t.Errorf("config:\n%s", yaml)
	}
	env := initReadFile(t, filepath.Join(dir, "env"))
	if !strings.Contains(env, "\nGATEWAYD_SLACK_BOT_TOKEN="+slacktest.BotToken+"\n") ||
		!strings.Contains(env, "\nGATEWAYD_SLACK_APP_TOKEN="+slacktest.AppToken+"\n") || strings.Contains(env, "TELEGRAM") {
		t.Errorf("env file:\n%s", env)
	}
	// The written config is what check-config accepts with the env file's tokens.
	t.Setenv("GATEWAYD_SLACK_BOT_TOKEN", slacktest.BotToken)
	t.Setenv("GATEWAYD_SLACK_APP_TOKEN", slacktest.AppToken)
	if c, err := (&cli.Flags{Config: cfg}).Load(); err != nil || !c.Slack.Enabled() || c.Slack.APIURL != sl.APIURL() {
		t.Errorf("written config: %v", err)
	}
}

const (
	initMatrixToken    = "syt_INIT_matrix_secret"
	initMatrixLogin    = "syt_INIT_login_secret"
	initMatrixPassword = "INIT pass'word \"secret\""
)

// newInitFakeMatrix answers whoami (initMatrixToken and initMatrixLogin
// are @codex:example.org's), the login flows and a password login of
// codex with initMatrixPassword, as the client-server API does.
func newInitFakeMatrix(t *testing.T) *httptest.Server {
	t.Helper()
	write := func(w http.ResponseWriter, status int, body any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(body)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /_matrix/client/v3/account/whoami", func(w http.ResponseWriter, r *http.Request) {
		switch r.Header.Get("Authorization") {
		case "Bearer " + initMatrixToken, "Bearer " + initMatrixLogin:
			write(w, http.StatusOK, map[string]any{"user_id": "@codex:example.org", "device_id": "D1"})
		default:
			write(w, http.StatusUnauthorized, map[string]any{"errcode": "M_UNKNOWN_TOKEN", "error": "Invalid access token passed."})
		}
	})
	mux.HandleFunc("GET /_matrix/client/v3/login", func(w http.ResponseWriter, r *http.Request) {
		write(w, http.StatusOK, map[string]any{"flows": []map[string]any{{"type": "m.login.password"}}})
	})
	mux.HandleFunc("POST /_matrix/client/v3/login", func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Identifier struct{ User string } `json:"identifier"`
			Password   string                `json:"password"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if req.Identifier.User != "codex" || req.Password != initMatrixPassword {
			write(w, http.StatusForbidden, map[string]any{"errcode": "M_FORBIDDEN", "error": "Invalid username or password"})
			return
		}
		write(w, http.StatusOK, map[string]any{"user_id": "@codex:example.org", "access_token": initMatrixLogin, "device_id": "D2"})
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestInitMatrixFlags(t *testing.T) {
	dir := initEnv(t)
	initFakeCodex(t, dir, true)
	hs := newInitFakeMatrix(t)
	cfg := filepath.Join(dir, "gatewayd.yaml")
	envFile := filepath.Join(dir, "env")
	base := []string{"init", "--yes", "--force", "--config", cfg, "--matrix-homeserver", hs.URL + "/"}
	secrets := []string{"INIT_matrix_secret", "INIT_login_secret", "INIT pass", "BAD-matrix-secret"}
	noSecrets := func(t *testing.T, out, errOut string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(out+errOut, s) {
				t.Errorf("a secret was printed:\n%s\n%s", out, errOut)
			}
		}
	}

	t.Run("token refused", func(t *testing.T) {
		bad := initSecretFile(t, dir, "bad", "syt_BAD-matrix-secret")
		code, out, errOut := runCLI(t, "", append(base, "--matrix-token-file", bad, "--allow-user", "@alice:example.org")...)
		if code != 2 || !strings.Contains(errOut, "matrix rejected the access token") || !strings.Contains(errOut, "M_UNKNOWN_TOKEN") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		noSecrets(t, out, errOut)
	})
	t.Run("password refused", func(t *testing.T) {
		bad := initSecretFile(t, dir, "badpw", "BAD-matrix-secret")
		code, out, errOut := runCLI(t, "", append(base, "--matrix-user", "codex", "--matrix-password-file", bad,
			"--allow-user", "matrix:@alice:example.org")...)
		if code != 2 || !strings.Contains(errOut, "matrix refused the login") || !strings.Contains(errOut, "M_FORBIDDEN") {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		noSecrets(t, out, errOut)
	})
	t.Run("token", func(t *testing.T) {
		tok := initSecretFile(t, dir, "tok", initMatrixToken)
		code, out, errOut := runCLI(t, "", append(base, "--matrix-token-file", tok, "--allow-user", "@alice:example.org")...)
		if code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		noSecrets(t, out, errOut)
		for _, want := range []string{"Matrix: token accepted (@codex:example.org)", "✓ matrix token accepted (@codex:example.org, device D1)"} {
			if !strings.Contains(out, want) {
				t.Errorf("stdout lacks %q:\n%s", want, out)
			}
		}
		yaml := initReadFile(t, cfg)
		if !strings.Contains(yaml, "matrix:\n  homeserver: \""+hs.URL+"\"\n  user_id: \"@codex:example.org\"\n  allowed_users: [\"@alice:example.org\"]") ||
			strings.Contains(yaml, "syt_") {
			t.Errorf("config:\n%s", yaml)
		}
		if env := initReadFile(t, envFile); !strings.Contains(env, "\nGATEWAYD_MATRIX_ACCESS_TOKEN="+initMatrixToken+"\n") {
			t.Errorf("env file:\n%s", env)
		}
	})
	// A login stores the token the homeserver gave, never the password.
	t.Run("login", func(t *testing.T) {
		pw := initSecretFile(t, dir, "pw", initMatrixPassword)
		code, out, errOut := runCLI(t, "", append(base, "--matrix-user", "codex", "--matrix-password-file", pw,
			"--allow-user", "matrix:@alice:example.org", "--allow-user", "matrix:@bob:example.org")...)
		if code != 0 {
			t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
		}
		noSecrets(t, out, errOut)
		if !strings.Contains(out, "Matrix: logged in as codex") {
			t.Errorf("stdout:\n%s", out)
		}
		env, yaml := initReadFile(t, envFile), initReadFile(t, cfg)
		if !strings.Contains(env, "\nGATEWAYD_MATRIX_ACCESS_TOKEN="+initMatrixLogin+"\n") || strings.Contains(env+yaml, "INIT pass") {
			t.Errorf("env file:\n%s\nconfig:\n%s", env, yaml)
		}
		if !strings.Contains(yaml, `allowed_users: ["@alice:example.org", "@bob:example.org"]`) {
			t.Errorf("config:\n%s", yaml)
		}
	})
}

func TestInitSlackAndMatrixUsageErrors(t *testing.T) {
	dir := initEnv(t)
	bot, app := initSecretFile(t, dir, "bot", "xoxb-1"), initSecretFile(t, dir, "app", "xapp-1")
	tok := initSecretFile(t, dir, "mx", initMatrixToken)
	tgFile := initSecretFile(t, dir, "tg.token", initGoodToken)
	tg := newInitFakeTelegram(t)
	cfg := filepath.Join(dir, "gatewayd.yaml")
	hs := "http://127.0.0.1:1"
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"slack bot token alone", []string{"--slack-bot-token-file", bot, "--allow-user", "U1"},
			"--slack-bot-token-file and --slack-app-token-file go together"},
		{"slack id", []string{"--slack-bot-token-file", bot, "--slack-app-token-file", app, "--allow-user", "slack:alice"},
			`invalid id "alice" (Slack ids look like U024BE7LH)`},
		{"slack url", []string{"--slack-bot-token-file", bot, "--slack-app-token-file", app, "--slack-api-url", "slack.com/api"},
			`"slack.com/api" is not an http(s) URL`},
		{"matrix token without homeserver", []string{"--matrix-token-file", tok}, "--matrix-homeserver is required"},
		{"matrix token and password", []string{"--matrix-homeserver", hs, "--matrix-token-file", tok, "--matrix-user", "codex",
			"--matrix-password-file", tok}, "not both"},
		{"matrix user without password", []string{"--matrix-homeserver", hs, "--matrix-user", "codex"}, "go together"},
		{"matrix homeserver alone", []string{"--matrix-homeserver", hs}, "--matrix-homeserver needs --matrix-token-file"},
		{"matrix api path", []string{"--matrix-homeserver", hs + "/_matrix/client/v3", "--matrix-token-file", tok}, "is not a homeserver URL"},
		{"matrix id", []string{"--matrix-homeserver", hs, "--matrix-token-file", tok, "--allow-user", "matrix:alice"}, `invalid user id "alice"`},
		{"slack id without slack", []string{"--telegram-token-file", tgFile, "--allow-user", "telegram:1", "--allow-user", "slack:U1"},
			"--allow-user slack:… given but no Slack tokens"},
		{"unknown platform", []string{"--telegram-token-file", tgFile, "--allow-user", "irc:1"}, "(telegram, discord, slack or matrix)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "", append([]string{"init", "--yes", "--config", cfg, "--telegram-api-url", tg.URL}, tt.args...)...)
			if code != 2 || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, want 2 with %q\nstdout:\n%s\nstderr:\n%s", code, tt.want, out, errOut)
			}
			if strings.Contains(errOut, "INIT_matrix_secret") {
				t.Errorf("token printed: %s", errOut)
			}
			if _, err := os.Stat(cfg); err == nil {
				t.Errorf("config written")
			}
		})
	}
}

// In a terminal, init asks for Slack's two tokens and Matrix's homeserver
// and login after Telegram's and Discord's, retries a refused token, and
// keeps the token the Matrix login gave, not the password.
func TestInitInteractiveSlackAndMatrix(t *testing.T) {
	bin := buildDaemon(t)
	dir := initEnv(t)
	initFakeCodex(t, dir, true)
	sl := slacktest.New(slacktest.Options{})
	defer sl.Close()
	hs := newInitFakeMatrix(t)
	cfg := filepath.Join(dir, "conf", "gatewayd.yaml")

	cmd := exec.Command(bin, "init", "--config", cfg, "--slack-api-url", sl.APIURL())
	p := startInitTerminal(t, cmd)

	p.expect("Telegram bot token (from @BotFather; empty to skip Telegram): ")
	p.send("")
	p.expect("Discord bot token (Developer Portal, Bot, Reset Token; empty to skip Discord): ")
	p.send("")
	const botPrompt = "Slack bot token (xoxb-…, the app's OAuth & Permissions page; empty to skip Slack): "
	p.expect(botPrompt)
	p.send(slacktest.AppToken) // the app token where the bot token goes
	p.expect("slack: that does not hold a bot token (xoxb-")
	p.expect(botPrompt)
	p.send("xoxb-BAD-slack-secret")
	p.expect("slack rejected the bot token")
	p.expect(botPrompt)
	p.send(slacktest.BotToken)
	p.expect("Slack: bot token accepted (@codex in Fake)")
	p.expect("Slack app-level token (xapp-…, Basic Information, App-Level Tokens, with connections:write): ")
	p.send(slacktest.AppToken)
	p.expect("Slack: app-level token accepted (Socket Mode)")
	p.expect("Matrix homeserver URL (e.g. https://matrix.example.org; empty to skip Matrix): ")
	p.send(hs.URL)
	p.expect("Matrix access token of the bot's account (empty to log in with its user and password): ")
	p.send("")
	p.expect("Matrix user of the bot (@name:server, or name): ")
	p.send("codex")
	p.expect("Password (used once to log in; init keeps the token, not the password): ")
	p.send(initMatrixPassword)
	p.expect("Matrix: logged in as codex")
	p.expect("Matrix: token accepted (@codex:example.org)")
	p.expect("Slack member ids to allow (profile, ⋮, Copy member ID; separate with spaces): ")
	p.send("alice")
	p.expect(`invalid id "alice"`)
	p.send("U2 W3")
	p.expect("Matrix user ids to allow (full ids such as @alice:example.org; separate with spaces): ")
	p.send("@alice:example.org")
	p.expect("Project (name=/absolute/dir; empty when done): ")
	p.send("")
	p.expect("Config valid.")
	p.expect("✓ slack Socket Mode connected")
	p.expect("✓ matrix token accepted (@codex:example.org")

	waitErr := make(chan error, 1)
	go func() { waitErr <- cmd.Wait() }()
	select {
	case err := <-waitErr:
		if err != nil {
			t.Fatalf("init: %v; the terminal shows:\n%s", err, p.output())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("init did not exit; the terminal shows:\n%s", p.output())
	}
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
	}
	out := p.output()
	for _, s := range []string{"BAD-slack-secret", slacktest.BotToken, "INIT pass", "INIT_login_secret"} {
		if strings.Contains(out, s) {
			t.Errorf("the terminal shows a secret (echo not off?):\n%s", out)
		}
	}
	yaml := initReadFile(t, cfg)
	for _, want := range []string{"slack:\n  api_url: \"" + sl.APIURL() + "\"\n  allowed_users: [\"U2\", \"W3\"]",
		"matrix:\n  homeserver: \"" + hs.URL + "\"\n  user_id: \"@codex:example.org\"\n  allowed_users: [\"@alice:example.org\"]"} {
		if !strings.Contains(yaml, want) {
			t.Errorf("config lacks %q:\n%s", want, yaml)
		}
	}
	env := initReadFile(t, filepath.Join(dir, "conf", "env"))
	for _, want := range []string{"\nGATEWAYD_SLACK_BOT_TOKEN=" + slacktest.BotToken + "\n", "\nGATEWAYD_SLACK_APP_TOKEN=" + slacktest.AppToken + "\n",
		"\nGATEWAYD_MATRIX_ACCESS_TOKEN=" + initMatrixLogin + "\n"} {
		if !strings.Contains(env, want) {
			t.Errorf("env file lacks %q:\n%s", want, env)
		}
	}
	if strings.Contains(env+yaml, "INIT pass") {
		t.Errorf("the password was written:\n%s\n%s", env, yaml)
	}
}
