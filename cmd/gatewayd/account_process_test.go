package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/gateway/feature/account"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// waitHealthReason asks /healthz, again each time the daemon logs, until
// it answers 503 with a reason containing want, and returns that reason.
func waitHealthReason(t *testing.T, api *client.API, d *daemonProc, want string) string {
	t.Helper()
	last, reason, exited := "", "", false
	reported := poll.Wait(90*time.Second, d.logged.Wait, func() bool {
		select {
		case <-d.done:
			exited = true
			return true
		default:
		}
		resp, err := http.Get(api.Base + "/healthz")
		if err != nil {
			return false
		}
		var body struct{ Status, Reason string }
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		last, reason = resp.Status+" "+body.Status+" "+body.Reason, body.Reason
		return resp.StatusCode == http.StatusServiceUnavailable && body.Status == "unavailable" && strings.Contains(body.Reason, want)
	})
	switch {
	case exited:
		t.Fatalf("daemon exited:\n%s", d.logs())
	case !reported:
		t.Fatalf("/healthz never reported %q (last: %s):\n%s", want, last, d.logs())
	}
	return reason
}

// The built daemon with the real codex on a bare CODEX_HOME (no login, no
// provider): /healthz is 503 with the reason, an API message is answered
// with it within a second without reaching the model, one error event
// names the fix, and `gatewayd doctor` run beside it fails the account
// check only (the live database and the daemon's own listener pass).
func TestProcessWithoutCodexAccount(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	cleanEnv(t)
	model := codextest.NewModel(t)
	bin := buildDaemon(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	cfgFile := writeProcessConfig(t, dir, map[string]any{
		"state_dir": filepath.Join(dir, "state"),
		"log":       map[string]any{"level": "debug", "format": "json"},
		"codex": map[string]any{"command": codextest.CodexBinary(t), "home": codextest.Home(t),
			"cwd": filepath.Join(dir, "work"), "start_timeout": "60s"},
		"api": map[string]any{"listen": addr},
	})
	api := &client.API{Base: "http://" + addr, HTTP: &http.Client{Timeout: time.Minute}}
	d := startDaemon(t, bin, cfgFile, dir, "noaccount", listenNotify(t).path)

	reason := waitHealthReason(t, api, d, "not logged in")
	if reason != account.MissingReason {
		t.Errorf("/healthz reason %q", reason)
	}
	start := time.Now()
	r := post(t, api, "nologin", "hello?")
	took := time.Since(start)
	if r.Reply != account.MissingReason {
		t.Errorf("answer %+v, want the reason", r)
	}
	// That it did not wait for codex is the model's empty request log
	// below; the time is a figure (a wall-clock bound fails on busy cores).
	t.Logf("the refusal was answered in %v", took)
	if n := len(model.Requests()); n != 0 {
		t.Errorf("the model got %d requests", n)
	}
	// The refused message and its answer are the lane's conversation, as
	// the console's lane page reads it after a reload.
	texts, _ := readTranscript(t, api, "/api/lanes/v1%3Aapi%3Anologin/transcript?limit=10")
	if want := []string{"notice:" + account.MissingReason, "user:hello?"}; strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("the lane's transcript %q, want %q", texts, want)
	}
	events := logEvents(d, "codex.account_missing", func(e map[string]any) bool { return e["level"] == "error" })
	if len(events) != 1 || !strings.Contains(events[0]["fix"].(string), "codex login --device-auth") {
		t.Errorf("codex.account_missing events %v, want one naming the fix", events)
	}

	// /login through the real app-server: offline, codex cannot reach
	// auth.openai.com and the lane hears why; with a network it gets a code.
	login := post(t, api, "nologin", "/login")
	if !strings.Contains(login.Reply, "Could not start the Codex login: failed to request device code") &&
		!strings.Contains(login.Reply, "enter the code") {
		t.Errorf("/login answer %+v", login)
	}

	code, out := runDoctor(t, cfgFile)
	failed := failedLines(out)
	if code != cli.ExitFailure || len(failed) != 1 || !strings.Contains(failed[0], "no account") {
		t.Errorf("doctor beside the daemon: exit %d, failed %q\n%s", code, failed, out)
	}
	for _, want := range []string{"integrity ok", "schema version", "held by a running gatewayd (/healthz 503"} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	if code := d.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d", code)
	}
	t.Logf("no-account answer in %v", took)
}
