package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// processConfig is the configuration of a daemon run with the real codex
// and the fake model; extra sections are merged in.
func processConfig(t *testing.T, dir, addr string, model *codextest.Model, extra map[string]any) string {
	t.Helper()
	cfg := map[string]any{
		"state_dir": filepath.Join(dir, "state"),
		"log":       map[string]any{"level": "debug", "format": "json"},
		"codex": map[string]any{
			"command": codextest.CodexBinary(t), "args": codextest.Args(model.URL), "home": codextest.Home(t),
			"cwd": filepath.Join(dir, "work"), "sandbox": "danger-full-access", "start_timeout": "60s",
		},
		"api": map[string]any{"listen": addr},
	}
	for k, v := range extra {
		cfg[k] = v
	}
	return writeProcessConfig(t, dir, cfg)
}

// The built daemon refuses the classic cross-site POST (text/plain, from
// another origin) without running a turn, while `gatewayd chat` and a
// curl-style JSON POST keep working.
func TestProcessRefusesCrossOriginButChatWorks(t *testing.T) {
	s := newDaemonSetup(t)
	model := s.model
	s.configure(t, nil)
	api := s.api
	d := s.start(t, "guard")

	before := len(model.Requests())
	tests := []struct {
		name string
		hdr  map[string]string
		want int
	}{
		{"text/plain from evil.example", map[string]string{"Content-Type": "text/plain", "Origin": "http://evil.example"}, 403},
		{"rebinding Host", map[string]string{"Content-Type": "application/json", "Host": "evil.example:8787"}, 403},
		{"text/plain without origin", map[string]string{"Content-Type": "text/plain"}, 415},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, _ := http.NewRequest("POST", api.Base+"/api/lanes/evil/messages", strings.NewReader(`{"text":"touch pwned"}`))
			for k, v := range tt.hdr {
				if k == "Host" {
					req.Host = v
					continue
				}
				req.Header.Set(k, v)
			}
			resp, err := api.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body map[string]string
			json.NewDecoder(resp.Body).Decode(&body)
			if resp.StatusCode != tt.want || body["error"] == "" {
				t.Errorf("status %d %v, want %d with an error message", resp.StatusCode, body, tt.want)
			}
		})
	}

	if reply := postMessage(t, api, "guard", "hello from curl"); !strings.Contains(reply, "hello from curl") {
		t.Errorf("JSON POST reply %q", reply)
	}
	var chatOut, chatErr bytes.Buffer
	std := cli.Stdio{In: strings.NewReader("hello from the terminal\n"), Out: &chatOut, Err: &chatErr}
	if err := client.Talk(context.Background(), api, "chatlane", "tester", std); err != nil {
		t.Fatalf("chat: %v\n%s", err, chatErr.String())
	}
	if !strings.Contains(chatOut.String(), "ECHO: hello from the terminal") {
		t.Errorf("chat output lacks the reply:\n%s", chatOut.String())
	}
	for _, r := range model.Requests()[before:] {
		if strings.Contains(r.LastUserText(), "pwned") {
			t.Errorf("a refused request reached the model: %q", r.LastUserText())
		}
	}
	if code := d.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d", code)
	}
}

// A Telegram token the Bot API refuses ends the daemon with exit 2 (which
// systemd does not restart), naming the URL used without the token.
func TestProcessRejectedTelegramTokenExitsTwo(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	const secret = "wrong-secret-4711"
	tg := telegramtest.New(t)
	model := codextest.NewModel(t)
	bin := buildDaemon(t)
	dir := t.TempDir()
	cfgFile := processConfig(t, dir, freeAddr(t), model, map[string]any{
		"telegram": map[string]any{"token": "999:" + secret, "api_url": tg.URL, "allowed_users": []string{"1"}},
	})
	d := startDaemon(t, bin, cfgFile, dir, "badtoken", listenNotify(t).path)
	exitsNamingKey(t, d, tg.URL+"/bot<token>/getMe", secret)
}
