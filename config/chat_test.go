package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The Slack and Matrix keys' cases for keyCases: their token files are
// their own (a Slack token must carry its prefix, which "from-file" lacks).
func chatKeyCases(secretDir string) []keyCase {
	tokenFile := filepath.Join(secretDir, "token")
	return []keyCase{
		{"slack.bot_token", "xoxb-1-bot", "xoxb-1-bot", func(c *Config) any { return c.Slack.BotToken }, "xoxb-1-bot"},
		{"slack.bot_token_file", filepath.Join(secretDir, "slack-bot"), filepath.Join(secretDir, "slack-bot"),
			func(c *Config) any { return c.Slack.BotToken }, "xoxb-from-file"},
		{"slack.app_token", "xapp-1-app", "xapp-1-app", func(c *Config) any { return c.Slack.AppToken }, "xapp-1-app"},
		{"slack.app_token_file", filepath.Join(secretDir, "slack-app"), filepath.Join(secretDir, "slack-app"),
			func(c *Config) any { return c.Slack.AppToken }, "xapp-from-file"},
		{"slack.api_url", "http://127.0.0.1:3/api/", "http://127.0.0.1:3/api/", func(c *Config) any { return c.Slack.APIURL }, "http://127.0.0.1:3/api/"},
		{"slack.allowed_users", "[U024BE7LH, W1]", "U024BE7LH, W1", func(c *Config) any { return c.Slack.AllowedUsers }, []string{"U024BE7LH", "W1"}},
		{"slack.allowed_channels", "[C012AB3CD]", "C012AB3CD", func(c *Config) any { return c.Slack.AllowedChannels }, []string{"C012AB3CD"}},
		{"slack.admins", "[U9]", "U9", func(c *Config) any { return c.Slack.Admins }, []string{"U9"}},
		{"matrix.homeserver", "https://matrix.example.org", "https://matrix.example.org",
			func(c *Config) any { return c.Matrix.Homeserver }, "https://matrix.example.org"},
		{"matrix.user_id", `"@codex:example.org"`, "@codex:example.org", func(c *Config) any { return c.Matrix.UserID }, "@codex:example.org"},
		{"matrix.access_token", "syt_secret", "syt_secret", func(c *Config) any { return c.Matrix.AccessToken }, "syt_secret"},
		{"matrix.access_token_file", tokenFile, tokenFile, func(c *Config) any { return c.Matrix.AccessToken }, "from-file"},
		{"matrix.allowed_users", `["@alice:example.org", "@bob:[::1]:8448"]`, "@alice:example.org,@bob:[::1]:8448",
			func(c *Config) any { return c.Matrix.AllowedUsers }, []string{"@alice:example.org", "@bob:[::1]:8448"}},
		{"matrix.allowed_rooms", `["!abc:example.org", "!v12RoomIdWithoutServer"]`, "!abc:example.org,!v12RoomIdWithoutServer",
			func(c *Config) any { return c.Matrix.AllowedRooms }, []string{"!abc:example.org", "!v12RoomIdWithoutServer"}},
		{"matrix.admins", `["@alice:example.org"]`, "@alice:example.org", func(c *Config) any { return c.Matrix.Admins }, []string{"@alice:example.org"}},
	}
}

// writeChatTokenFiles writes the Slack token files chatKeyCases names.
func writeChatTokenFiles(t *testing.T, dir string) {
	t.Helper()
	writeFile(t, dir, "slack-bot", "xoxb-from-file\n")
	writeFile(t, dir, "slack-app", " xapp-from-file\n")
}

// chatCompanions are the keys a Slack or Matrix case needs to pass the
// "required when" rules.
func chatCompanions(key string) map[string]string {
	switch {
	case strings.HasPrefix(key, "slack.bot_token"):
		return map[string]string{"slack.app_token": "xapp-1-app", "slack.allowed_users": "U1"}
	case strings.HasPrefix(key, "slack.app_token"):
		return map[string]string{"slack.bot_token": "xoxb-1-bot", "slack.allowed_users": "U1"}
	case key == "matrix.homeserver":
		return map[string]string{"matrix.access_token": "syt_x", "matrix.allowed_users": "@a:example.org"}
	case strings.HasPrefix(key, "matrix.access_token"):
		return map[string]string{"matrix.homeserver": "https://matrix.example.org", "matrix.allowed_users": "@a:example.org"}
	}
	return nil
}

func TestChatValidationErrors(t *testing.T) {
	slackBoth := map[string]string{"GATEWAYD_SLACK_BOT_TOKEN": "xoxb-1", "GATEWAYD_SLACK_APP_TOKEN": "xapp-1"}
	withSlack := func(extra map[string]string) map[string]string {
		m := map[string]string{"GATEWAYD_SLACK_ALLOWED_USERS": "U1"}
		for k, v := range slackBoth {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	matrixOn := map[string]string{"GATEWAYD_MATRIX_HOMESERVER": "https://m.example.org", "GATEWAYD_MATRIX_ACCESS_TOKEN": "syt_x"}
	tests := []struct {
		name string
		file string
		env  map[string]string
		want string
	}{
		{"slack bot token alone", "slack:\n  bot_token: xoxb-1\n  allowed_users: [U1]\n", nil,
			"config: slack.app_token: required when slack.bot_token is set (Socket Mode needs both"},
		{"slack app token alone", "", map[string]string{"GATEWAYD_SLACK_APP_TOKEN": "xapp-1", "GATEWAYD_SLACK_ALLOWED_USERS": "U1"},
			"config: slack.bot_token: required when slack.app_token is set (Socket Mode needs both"},
		{"slack user token as bot token", "", withSlack(map[string]string{"GATEWAYD_SLACK_BOT_TOKEN": "xoxp-1"}),
			"config: slack.bot_token: not a bot token (xoxb-…)"},
		{"slack tokens swapped", "", withSlack(map[string]string{"GATEWAYD_SLACK_BOT_TOKEN": "xapp-1", "GATEWAYD_SLACK_APP_TOKEN": "xoxb-1"}),
			"config: slack.bot_token: not a bot token (xoxb-…)"},
		{"slack app token prefix", "", withSlack(map[string]string{"GATEWAYD_SLACK_APP_TOKEN": "xoxb-2"}),
			"config: slack.app_token: not an app-level token (xapp-…)"},
		{"slack allowlist required", "", slackBoth,
			"config: slack.allowed_users: required when slack.bot_token and slack.app_token are set"},
		{"slack user id", "", withSlack(map[string]string{"GATEWAYD_SLACK_ALLOWED_USERS": "@alice"}),
			`config: slack.allowed_users: invalid id "@alice" (Slack ids look like U024BE7LH)`},
		{"slack channel id", "slack:\n  allowed_channels: [\"#general\"]\n", nil,
			`config: slack.allowed_channels: invalid id "#general" (Slack ids look like U024BE7LH)`},
		{"slack lower-case admin", "slack:\n  admins: [u123]\n", nil,
			`config: slack.admins: invalid id "u123" (Slack ids look like U024BE7LH)`},
		{"slack url", "slack:\n  api_url: slack.com/api\n", nil,
			`config: slack.api_url: invalid URL "slack.com/api" (use http:// or https://)`},
		{"slack token file and token", "", withSlack(map[string]string{"GATEWAYD_SLACK_APP_TOKEN_FILE": "/nonexistent"}),
			"config: slack.app_token_file: both slack.app_token and slack.app_token_file are set; set one"},
		{"slack missing token file", "slack:\n  bot_token_file: /nonexistent/bot\n", nil,
			"config: slack.bot_token_file: cannot read /nonexistent/bot: no such file or directory"},
		{"matrix token alone", "", map[string]string{"GATEWAYD_MATRIX_ACCESS_TOKEN": "syt_x", "GATEWAYD_MATRIX_ALLOWED_USERS": "@a:x.org"},
			"config: matrix.homeserver: required when matrix.access_token is set"},
		{"matrix homeserver alone", "matrix:\n  homeserver: https://m.example.org\n  allowed_users: [\"@a:x.org\"]\n", nil,
			"config: matrix.access_token: required when matrix.homeserver is set"},
		{"matrix homeserver scheme", "", map[string]string{"GATEWAYD_MATRIX_HOMESERVER": "matrix.example.org"},
			`config: matrix.homeserver: invalid homeserver URL "matrix.example.org" (use https://matrix.example.org)`},
		{"matrix homeserver api path", "", map[string]string{"GATEWAYD_MATRIX_HOMESERVER": "https://m.example.org/_matrix/client/v3"},
			`config: matrix.homeserver: invalid homeserver URL "https://m.example.org/_matrix/client/v3" (the server's base URL`},
		{"matrix allowlist required", "", matrixOn,
			"config: matrix.allowed_users: required when matrix.homeserver and matrix.access_token are set"},
		{"matrix user without sigil", "matrix:\n  allowed_users: [\"alice:example.org\"]\n", nil,
			`config: matrix.allowed_users: invalid user id "alice:example.org" (use the full id with its sigil, e.g. @alice:example.org)`},
		{"matrix user without server", "", map[string]string{"GATEWAYD_MATRIX_ALLOWED_USERS": "@alice"},
			`config: matrix.allowed_users: invalid user id "@alice"`},
		{"matrix user with bad server", "", map[string]string{"GATEWAYD_MATRIX_ADMINS": "@alice:exa mple.org"},
			`config: matrix.admins: invalid user id "@alice:exa mple.org"`},
		{"matrix bot id", "", map[string]string{"GATEWAYD_MATRIX_USER_ID": "codex"},
			`config: matrix.user_id: invalid user id "codex"`},
		{"matrix room alias", "matrix:\n  allowed_rooms: [\"#dev:example.org\"]\n", nil,
			`config: matrix.allowed_rooms: invalid room id "#dev:example.org" (use the room id with its sigil`},
		{"matrix room without id", "", map[string]string{"GATEWAYD_MATRIX_ALLOWED_ROOMS": "!:example.org"},
			`config: matrix.allowed_rooms: invalid room id "!:example.org"`},
		{"matrix unknown key", "matrix:\n  password: x\n", nil, "config: matrix.password: unknown key"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := isolate(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			wantConfigError(t, writeFile(t, dir, "gw.yaml", tc.file), tc.want)
		})
	}
}

// Slack runs with both tokens, Matrix with homeserver and token; a config
// naming neither platform enables neither.
func TestChatPlatformsEnabled(t *testing.T) {
	tests := []struct {
		name         string
		env          map[string]string
		slack, matrx bool
	}{
		{"none", nil, false, false},
		{"slack", map[string]string{"GATEWAYD_SLACK_BOT_TOKEN": "xoxb-1", "GATEWAYD_SLACK_APP_TOKEN": "xapp-1",
			"GATEWAYD_SLACK_ALLOWED_USERS": "U1"}, true, false},
		{"matrix", map[string]string{"GATEWAYD_MATRIX_HOMESERVER": "http://127.0.0.1:8008", "GATEWAYD_MATRIX_ACCESS_TOKEN": "syt_x",
			"GATEWAYD_MATRIX_ALLOWED_USERS": "@a:localhost"}, false, true},
		{"matrix allowlist without homeserver", map[string]string{"GATEWAYD_MATRIX_ALLOWED_USERS": "@a:localhost"}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := isolate(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			cfg, err := Load(Options{File: writeFile(t, dir, "gw.yaml", ""), Env: os.Environ()})
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Slack.Enabled() != tc.slack || cfg.Matrix.Enabled() != tc.matrx {
				t.Errorf("slack enabled %v, matrix enabled %v; want %v, %v", cfg.Slack.Enabled(), cfg.Matrix.Enabled(), tc.slack, tc.matrx)
			}
		})
	}
}

// The tokens never reach an error message or the printed config.
func TestChatSecretsNeverShown(t *testing.T) {
	const bot, app, mx = "xoxp-SLACK-SECRET-1", "xapp-SLACK-SECRET-2", "syt_MATRIX-SECRET-3"
	dir := isolate(t)
	t.Setenv("GATEWAYD_SLACK_BOT_TOKEN", bot) // a user token: refused by prefix
	t.Setenv("GATEWAYD_SLACK_APP_TOKEN", app)
	t.Setenv("GATEWAYD_MATRIX_ACCESS_TOKEN", mx) // without a homeserver
	_, err := Load(Options{File: writeFile(t, dir, "gw.yaml", ""), Env: os.Environ()})
	if err == nil {
		t.Fatal("want an error")
	}
	for _, s := range []string{bot, app, mx} {
		if strings.Contains(err.Error(), s) {
			t.Errorf("error leaks %s: %v", s, err)
		}
	}

	t.Setenv("GATEWAYD_SLACK_BOT_TOKEN", "xoxb-SLACK-SECRET-1")
	t.Setenv("GATEWAYD_SLACK_ALLOWED_USERS", "U1")
	t.Setenv("GATEWAYD_MATRIX_HOMESERVER", "https://m.example.org")
	t.Setenv("GATEWAYD_MATRIX_ALLOWED_USERS", "@a:example.org")
	cfg, err := Load(Options{File: writeFile(t, dir, "gw.yaml", ""), Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	out := cfg.Redacted()
	for _, s := range []string{"SLACK-SECRET", "MATRIX-SECRET"} {
		if strings.Contains(out, s) {
			t.Errorf("redacted config leaks %s:\n%s", s, out)
		}
	}
	for _, line := range []string{"slack.bot_token: [redacted]", "slack.app_token: [redacted]", "matrix.access_token: [redacted]",
		`matrix.homeserver: "https://m.example.org"`, `slack.api_url: "https://slack.com/api/"`} {
		if !strings.Contains(out, line+"\n") {
			t.Errorf("output lacks %q:\n%s", line, out)
		}
	}
}
