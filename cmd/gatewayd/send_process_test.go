package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// `gatewayd send` as a user runs it: the built binary against
// the built daemon with the real codex and the fake model, the token from
// api.token_file; exit 0 with the reply for a completed turn, 1 for a
// failed one.
func TestProcessSendWithTheRealCodex(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	model := codextest.NewModel(t)
	model.Respond(func(req codextest.Request) codextest.Reply {
		if strings.Contains(req.LastUserText(), "FAIL-THIS-TURN") {
			return codextest.Reply{HTTPStatus: http.StatusBadRequest} // codex does not retry a 400
		}
		return codextest.DefaultReply(req)
	})
	bin := buildDaemon(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	tokenFile := filepath.Join(dir, "api-token")
	if err := os.WriteFile(tokenFile, []byte("tok\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgFile := processConfig(t, dir, addr, model, map[string]any{
		"api": map[string]any{"listen": addr, "token_file": tokenFile},
	})
	api := &client.API{Base: "http://" + addr, Token: "tok", HTTP: &http.Client{Timeout: 2 * time.Minute}}
	d := startDaemon(t, bin, cfgFile, dir, "send", listenNotify(t).path)
	waitHealthy(t, api, d)

	runSend := func(stdin string, args ...string) (int, string, string) {
		t.Helper()
		cmd := exec.Command(bin, append([]string{"send", "--config", cfgFile}, args...)...)
		cmd.Env = daemonEnv()
		cmd.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errOut
		err := cmd.Run()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatal(err)
		}
		return cmd.ProcessState.ExitCode(), out.String(), errOut.String()
	}

	if code, out, errOut := runSend("", "web", "hello"); code != 0 || out != "ECHO: hello\n" {
		t.Errorf("send web hello: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := runSend("piped text\n", "web"); code != 0 || out != "ECHO: piped text\n" {
		t.Errorf("send web <stdin: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut := runSend("", "--json", "web", "as", "json")
	var ans struct{ Reply, Status, ThreadID string }
	if err := json.Unmarshal([]byte(out), &ans); code != 0 || err != nil || ans.Reply != "ECHO: as json" || ans.Status != "completed" {
		t.Errorf("send --json: exit %d, stdout %q (%v), stderr %q", code, out, err, errOut)
	}
	code, out, errOut = runSend("", "web", "FAIL-THIS-TURN")
	if code != 1 || !strings.Contains(errOut, `(status "failed")`) {
		t.Errorf("a failed turn: exit %d, stderr %q; want 1 naming the status", code, errOut)
	}
	t.Logf("a failed turn: stdout %q, stderr %q", out, errOut)
	if code := d.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d", code)
	}
}
