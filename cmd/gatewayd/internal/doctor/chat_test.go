package doctor

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/platforms/slack/slacktest"
)

// doctorLines runs check on a fresh doctor and returns its report and
// how many checks failed; the report must never hold one of secrets.
func doctorLines(t *testing.T, check func(d *doctor), secrets ...string) (string, int) {
	t.Helper()
	var out strings.Builder
	d := &doctor{out: &out, http: &http.Client{Timeout: 10 * time.Second}}
	check(d)
	for _, s := range secrets {
		if strings.Contains(out.String(), s) {
			t.Errorf("the report shows a secret:\n%s", out.String())
		}
	}
	return out.String(), d.failed
}

func TestDoctorSlack(t *testing.T) {
	sl := slacktest.New(slacktest.Options{})
	t.Cleanup(sl.Close)
	good := config.Slack{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: sl.APIURL(), AllowedUsers: []string{"U1"}}
	tests := []struct {
		name   string
		cfg    func(c *config.Slack)
		failed int
		want   []string
	}{
		{"all pass", func(*config.Slack) {}, 0, []string{
			"✓ slack bot token accepted (@codex in Fake)",
			"✓ slack Socket Mode connected (app " + slacktest.AppID + ", 1 connection(s) open)",
			"✓ slack allowlist: 1 user(s), every channel the bot is in"}},
		{"bot token refused", func(c *config.Slack) { c.BotToken = "xoxb-wrong-secret" }, 1, []string{
			"✗ slack bot token refused: slack: slack.bot_token refused: " + sl.APIURL() + "auth.test answered invalid_auth",
			"fix: set slack.bot_token (or slack.bot_token_file) to the Bot User OAuth Token",
			"✓ slack Socket Mode connected"}},
		{"app token refused", func(c *config.Slack) { c.AppToken = "xapp-wrong-secret" }, 1, []string{
			"✓ slack bot token accepted",
			"✗ slack app token refused: slack: slack.app_token refused: " + sl.APIURL() + "apps.connections.open answered invalid_auth",
			"fix: set slack.app_token (or slack.app_token_file) to an App-Level Token (xapp-…) with connections:write"}},
		{"channels and no users", func(c *config.Slack) { c.AllowedUsers, c.AllowedChannels = nil, []string{"C1", "C2"} }, 1, []string{
			"✗ slack allowlist is empty: nobody may talk to the bot", "fix: set slack.allowed_users"}},
		{"slack unreachable", func(c *config.Slack) { c.APIURL = "http://127.0.0.1:1/api/" }, 2, []string{
			"✗ slack: slack: http://127.0.0.1:1/api/auth.test: ", "fix: check the network path to Slack's Web API (slack.api_url)",
			"✗ slack Socket Mode: slack: http://127.0.0.1:1/api/apps.connections.open: "}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.cfg(&cfg)
			out, failed := doctorLines(t, func(d *doctor) { d.checkSlack(t.Context(), cfg) }, "wrong-secret")
			if failed != tc.failed {
				t.Errorf("%d failed, want %d:\n%s", failed, tc.failed, out)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("report lacks %q:\n%s", want, out)
				}
			}
		})
	}
	// A platform without its tokens is not checked at all.
	if out, failed := doctorLines(t, func(d *doctor) { d.checkSlack(t.Context(), config.Slack{AllowedUsers: []string{"U1"}}) }); out != "" || failed != 0 {
		t.Errorf("slack off: %d failed:\n%s", failed, out)
	}
}

// matrixWhoami answers whoami for token as @codex:example.org, 401
// M_UNKNOWN_TOKEN otherwise.
func matrixWhoami(t *testing.T, token string) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/_matrix/client/v3/account/whoami" || r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"errcode":"M_UNKNOWN_TOKEN","error":"Invalid access token passed."}`))
			return
		}
		w.Write([]byte(`{"user_id":"@codex:example.org","device_id":"GW1"}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestDoctorMatrix(t *testing.T) {
	const token = "syt_doctor_secret"
	hs := matrixWhoami(t, token)
	good := config.Matrix{Homeserver: hs.URL, AccessToken: token, AllowedUsers: []string{"@alice:example.org"}}
	tests := []struct {
		name   string
		cfg    func(c *config.Matrix)
		failed int
		want   []string
	}{
		{"all pass", func(*config.Matrix) {}, 0, []string{
			"✓ matrix token accepted (@codex:example.org, device GW1)",
			"✓ matrix allowlist: 1 user(s), every room an allowed user invites the bot to"}},
		{"user id matches", func(c *config.Matrix) { c.UserID, c.AllowedRooms = "@codex:example.org", []string{"!r:example.org"} }, 0, []string{
			"✓ matrix token accepted", "✓ matrix allowlist: 1 user(s), 1 room(s)"}},
		{"token refused", func(c *config.Matrix) { c.AccessToken = "syt_wrong_secret" }, 1, []string{
			"✗ matrix token refused: matrix: matrix.access_token refused: " + hs.URL + "/_matrix/client/v3/account/whoami answered 401 M_UNKNOWN_TOKEN",
			"fix: set matrix.access_token (or matrix.access_token_file)"}},
		{"another account's token", func(c *config.Matrix) { c.UserID = "@other:example.org" }, 1, []string{
			"✗ matrix token belongs to @codex:example.org, not matrix.user_id @other:example.org"}},
		{"no users", func(c *config.Matrix) { c.AllowedUsers = nil }, 1, []string{"✗ matrix allowlist is empty"}},
		{"homeserver unreachable", func(c *config.Matrix) { c.Homeserver = "http://127.0.0.1:1" }, 1, []string{
			"✗ matrix: matrix: http://127.0.0.1:1/_matrix/client/v3/account/whoami: ", "fix: check matrix.homeserver"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good
			tc.cfg(&cfg)
			out, failed := doctorLines(t, func(d *doctor) { d.checkMatrix(t.Context(), cfg) }, token, "wrong_secret")
			if failed != tc.failed {
				t.Errorf("%d failed, want %d:\n%s", failed, tc.failed, out)
			}
			for _, want := range tc.want {
				if !strings.Contains(out, want) {
					t.Errorf("report lacks %q:\n%s", want, out)
				}
			}
		})
	}
}
