package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/platforms/slack/slacktest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// A Slack bot token the Web API refuses ends the daemon with exit 2
// (which systemd does not restart), naming the key and not the token.
func TestProcessRejectedSlackTokenExitsTwo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	const secret = "wrong-secret-4711"
	sl := slacktest.New(slacktest.Options{})
	t.Cleanup(sl.Close)
	model := codextest.NewModel(t)
	bin := buildDaemon(t)
	dir := t.TempDir()
	cfgFile := processConfig(t, dir, freeAddr(t), model, map[string]any{
		"slack": map[string]any{"bot_token": "xoxb-" + secret, "app_token": slacktest.AppToken, "api_url": sl.APIURL(),
			"allowed_users": []string{"U1"}},
	})
	d := startDaemon(t, bin, cfgFile, dir, "slackbadtoken", listenNotify(t).path)
	select {
	case <-d.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the daemon kept running with a rejected token:\n%s", d.logs())
	}
	if code := d.cmd.ProcessState.ExitCode(); code != cli.ExitUsage {
		t.Errorf("exit code %d, want %d\n%s", code, cli.ExitUsage, d.logs())
	}
	out := d.logs()
	if !strings.Contains(out, "slack.bot_token") {
		t.Errorf("output does not name slack.bot_token:\n%s", out)
	}
	if strings.Contains(out, secret) {
		t.Errorf("output contains the token:\n%s", out)
	}
}

// A Matrix access token the homeserver refuses ends the daemon with exit 2,
// naming the key and not the token.
func TestProcessRejectedMatrixTokenExitsTwo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	const secret = "syt_wrong-secret-4711"
	hs := newWhoamiHomeserver(t)
	model := codextest.NewModel(t)
	bin := buildDaemon(t)
	dir := t.TempDir()
	cfgFile := processConfig(t, dir, freeAddr(t), model, map[string]any{
		"matrix": map[string]any{"homeserver": hs.URL, "access_token": secret, "allowed_users": []string{"@alice:example.org"}},
	})
	d := startDaemon(t, bin, cfgFile, dir, "matrixbadtoken", listenNotify(t).path)
	select {
	case <-d.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the daemon kept running with a rejected token:\n%s", d.logs())
	}
	if code := d.cmd.ProcessState.ExitCode(); code != cli.ExitUsage {
		t.Errorf("exit code %d, want %d\n%s", code, cli.ExitUsage, d.logs())
	}
	out := d.logs()
	if !strings.Contains(out, "matrix.access_token") {
		t.Errorf("output does not name matrix.access_token:\n%s", out)
	}
	if strings.Contains(out, secret) {
		t.Errorf("output contains the token:\n%s", out)
	}
}

// whoamiToken is the one token newWhoamiHomeserver accepts.
const whoamiToken = "syt_whoami_token_for_tests"

// newWhoamiHomeserver answers the client-server API's whoami as a
// homeserver does: @codex:example.org for whoamiToken, 401
// M_UNKNOWN_TOKEN for any other token.
func newWhoamiHomeserver(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/_matrix/client/v3/account/whoami" || r.Header.Get("Authorization") != "Bearer "+whoamiToken {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"errcode":"M_UNKNOWN_TOKEN","error":"Invalid access token passed."}`))
			return
		}
		w.Write([]byte(`{"user_id":"@codex:example.org","device_id":"GW1"}`))
	}))
	t.Cleanup(srv.Close)
	return srv
}
