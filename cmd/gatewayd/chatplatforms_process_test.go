package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/platforms/matrix/matrixtest"
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
	exitsNamingKey(t, d, "slack.bot_token", secret)
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
	exitsNamingKey(t, d, "matrix.access_token", secret)
}

// exitsNamingKey waits for a daemon refused at start-up: exit 2, what was
// refused named (a key, or the URL without its token), the secret nowhere
// in its output.
func exitsNamingKey(t *testing.T, d *daemonProc, named, secret string) {
	t.Helper()
	select {
	case <-d.done:
	case <-time.After(2 * time.Minute):
		t.Fatalf("the daemon kept running with a rejected token:\n%s", d.logs())
	}
	if code := d.cmd.ProcessState.ExitCode(); code != cli.ExitUsage {
		t.Errorf("exit code %d, want %d\n%s", code, cli.ExitUsage, d.logs())
	}
	out := d.logs()
	if !strings.Contains(out, named) {
		t.Errorf("output does not name %s:\n%s", named, out)
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

// The built daemon runs Slack and Matrix beside each other from the
// config alone: a Slack DM and a Matrix room are answered through the
// real app-server, and SIGHUP gives both adapters their new allowlists.
func TestProcessSlackAndMatrixLanes(t *testing.T) {
	s := newDaemonSetup(t)
	sl := slacktest.New(slacktest.Options{})
	t.Cleanup(sl.Close)
	mx := matrixtest.New(t)
	const alice, bob = "@alice:fake.test", "@bob:fake.test"
	room := mx.CreateRoom(matrixtest.RoomOptions{Creator: alice, Members: []string{matrixtest.BotUser}})
	bobRoom := mx.CreateRoom(matrixtest.RoomOptions{Creator: bob, Members: []string{matrixtest.BotUser}})
	platforms := func(slackUsers, matrixUsers []string) map[string]any {
		return map[string]any{
			"slack": map[string]any{"bot_token": slacktest.BotToken, "app_token": slacktest.AppToken, "api_url": sl.APIURL(),
				"allowed_users": slackUsers},
			"matrix": map[string]any{"homeserver": mx.URL, "access_token": matrixtest.BotToken, "allowed_users": matrixUsers},
		}
	}
	s.configure(t, platforms([]string{"U1"}, []string{alice}))
	d := s.start(t, "slackmatrix")
	for _, p := range []string{"slack", "matrix"} {
		if len(waitLogEvents(t, d, "platform.enabled", func(e map[string]any) bool { return e["platform"] == p })) == 0 {
			t.Errorf("%s not enabled:\n%s", p, d.logs())
		}
	}

	slackReplied := func(channel, text string) func() bool {
		return func() bool {
			for _, m := range sl.Sent(channel) {
				if m.BotID != "" && strings.Contains(m.Text+string(m.Blocks), "ECHO: "+text) {
					return true
				}
			}
			return false
		}
	}
	matrixReplied := func(room, text string) func() bool {
		return func() bool {
			for _, e := range mx.Sent(room, matrixtest.BotUser, "m.room.message") {
				// The model echoes the turn's text, which in a room names
				// who spoke ("ECHO: [alice]: …").
				if body, _ := e.Content["body"].(string); strings.HasPrefix(body, "ECHO: ") && strings.Contains(body, text) {
					return true
				}
			}
			return false
		}
	}
	waitMatrix := func(cond func() bool) bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return mx.WaitFor(ctx, cond) == nil
	}

	sl.Post(slacktest.Post{Channel: "D1", User: "U1", Text: "hello slack"})
	if !sl.WaitFor(time.Minute, slackReplied("D1", "hello slack")) {
		t.Fatalf("no Slack answer in D1: %+v\n%s", sl.Sent("D1"), d.logs())
	}
	mx.Post(room, alice, "hello matrix")
	if !waitMatrix(matrixReplied(room, "hello matrix")) {
		t.Fatalf("no Matrix answer in %s: %+v\n%s", room, mx.Events(room), d.logs())
	}

	// Allow U2 and bob, and reload.
	s.configure(t, platforms([]string{"U1", "U2"}, []string{alice, bob}))
	if err := d.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"slack", "matrix"} {
		if len(waitLogEvents(t, d, "config.allowlist_reloaded", func(e map[string]any) bool { return e["platform"] == p })) == 0 {
			t.Fatalf("%s allowlist not reloaded:\n%s", p, d.logs())
		}
	}
	sl.Post(slacktest.Post{Channel: "D2", User: "U2", Text: "hello from U2"})
	if !sl.WaitFor(time.Minute, slackReplied("D2", "hello from U2")) {
		t.Errorf("U2, allowed by the reload, is not answered: %+v\n%s", sl.Sent("D2"), d.logs())
	}
	mx.Post(bobRoom, bob, "hello from bob")
	if !waitMatrix(matrixReplied(bobRoom, "hello from bob")) {
		t.Errorf("bob, allowed by the reload, is not answered: %+v\n%s", mx.Events(bobRoom), d.logs())
	}
	if code := d.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d\n%s", code, d.logs())
	}
}
