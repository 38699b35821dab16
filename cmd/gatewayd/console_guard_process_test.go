package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"
)

const (
	listenerCSP = "default-src 'none'; frame-ancestors 'none'"
	pageCSP     = "default-src 'self'; frame-ancestors 'none'"
)

// rawCall is one request to the daemon as a client that is not
// apiClient sends it: its own headers and body, the whole answer back.
type rawCall struct {
	method, path, token, ctype, body string
}

func (c rawCall) do(t *testing.T, base string) (*http.Response, string) {
	t.Helper()
	var body io.Reader
	if c.method != http.MethodGet {
		body = strings.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(t.Context(), c.method, base+c.path, body)
	if err != nil {
		t.Fatal(err)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.ctype != "" {
		req.Header.Set("Content-Type", c.ctype)
	}
	resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// The built daemon with api.Token set: every response of its
// listener, whatever route or refusal, forbids framing and sniffing (the
// console's page with a CSP that loads its own files, everything else
// with one that loads nothing); an admin POST that is not JSON is 415 and
// resets nothing, while {} and an empty JSON body reset; /metrics needs
// the token, unless GATEWAYD_API_METRICS_PUBLIC=true after a restart.
func TestProcessFramingAdminJSONAndMetricsToken(t *testing.T) {
	s := newDaemonSetup(t)
	bin, dir := s.bin, s.dir
	const token = "tok"
	s.configure(t, map[string]any{"api": map[string]any{"token": token}})
	cfgFile, api := s.cfgFile, s.api
	d := s.start(t, "guarded")
	if reply := postMessage(t, api, "web", "hello"); reply != "ECHO: hello" {
		t.Fatalf("first reply %q", reply)
	}

	for _, c := range []struct {
		rawCall
		code int
		csp  string
	}{
		{rawCall{method: "GET", path: "/"}, 200, pageCSP},
		{rawCall{method: "GET", path: "/console/app.js"}, 200, pageCSP},
		{rawCall{method: "GET", path: "/api/lanes", token: token}, 200, listenerCSP},
		{rawCall{method: "GET", path: "/api/lanes"}, 401, listenerCSP},
		{rawCall{method: "GET", path: "/api/lanes/v1:api:..%2Fadmin", token: token}, 400, listenerCSP},
		{rawCall{method: "GET", path: "/api/status", token: token}, 200, listenerCSP},
		{rawCall{method: "GET", path: "/api/admin/sessions", token: token}, 200, listenerCSP},
		{rawCall{method: "POST", path: "/api/lanes/web/messages", token: token, ctype: "application/json", body: `{"text":"again"}`}, 200, listenerCSP},
		{rawCall{method: "GET", path: "/metrics", token: token}, 200, listenerCSP},
		{rawCall{method: "GET", path: "/healthz"}, 200, listenerCSP},
		{rawCall{method: "GET", path: "/nowhere"}, 404, listenerCSP},
	} {
		resp, body := c.do(t, api.Base)
		if resp.StatusCode != c.code {
			t.Errorf("%s %s = %d %.200s, want %d", c.method, c.path, resp.StatusCode, body, c.code)
		}
		for name, want := range map[string]string{"Content-Security-Policy": c.csp, "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff"} {
			if got := resp.Header.Get(name); got != want {
				t.Errorf("%s %s: %s = %q, want %q", c.method, c.path, name, got, want)
			}
		}
	}

	// Admin POSTs: only JSON resets.
	const reset = "/api/admin/sessions/v1:api:web/reset"
	for _, c := range []struct {
		rawCall
		code  int
		reset bool
	}{
		{rawCall{method: "POST", path: reset, token: token}, 415, false},
		{rawCall{method: "POST", path: reset, token: token, ctype: "text/plain", body: "{}"}, 415, false},
		{rawCall{method: "POST", path: reset, token: token, ctype: "application/x-www-form-urlencoded", body: "a=b"}, 415, false},
		{rawCall{method: "POST", path: reset, token: token, ctype: "application/json", body: "{}"}, 200, true},
		{rawCall{method: "POST", path: reset, token: token, ctype: "application/json"}, 200, true},
	} {
		before := laneStateOf(t, api, "v1:api:web")
		resp, body := c.do(t, api.Base)
		var answer struct{ Error string }
		_ = json.Unmarshal([]byte(body), &answer)
		if resp.StatusCode != c.code {
			t.Errorf("POST reset (%q, %q) = %d %s, want %d", c.ctype, c.body, resp.StatusCode, body, c.code)
		}
		if c.code == 415 && !strings.Contains(answer.Error, "application/json") {
			t.Errorf("POST reset (%q): error %q does not say to send JSON", c.ctype, answer.Error)
		}
		if after := laneStateOf(t, api, "v1:api:web"); (after.Generation != before.Generation) != c.reset {
			t.Errorf("POST reset (%q, %q): generation %d → %d, want reset %v", c.ctype, c.body, before.Generation, after.Generation, c.reset)
		}
	}

	// /metrics: the token, like the API.
	if resp, body := (rawCall{method: "GET", path: "/metrics"}).do(t, api.Base); resp.StatusCode != 401 || strings.Contains(body, "gatewayd_") {
		t.Errorf("GET /metrics without the token = %d %.200s, want 401 and no numbers", resp.StatusCode, body)
	}
	if resp, body := (rawCall{method: "GET", path: "/metrics", token: "wrong"}).do(t, api.Base); resp.StatusCode != 401 {
		t.Errorf("GET /metrics with a wrong token = %d %.200s, want 401", resp.StatusCode, body)
	}
	if resp, body := (rawCall{method: "GET", path: "/metrics", token: token}).do(t, api.Base); resp.StatusCode != 200 || !strings.Contains(body, "gatewayd_turns_total") {
		t.Errorf("GET /metrics with the token = %d %.200s, want 200 with the numbers", resp.StatusCode, body)
	}
	if code := d.terminate(t, 30*time.Second); code != 0 {
		t.Fatalf("exit after SIGTERM = %d", code)
	}

	// api.metrics_public: /metrics for a scraper without the token; the
	// rest still needs it.
	public := startDaemonWith(t, bin, cfgFile, dir, "metrics-public", listenNotify(t).path, func(c *exec.Cmd) error {
		c.Env = append(c.Env, "GATEWAYD_API_METRICS_PUBLIC=true")
		return c.Start()
	})
	waitHealthy(t, api, public)
	if resp, body := (rawCall{method: "GET", path: "/metrics"}).do(t, api.Base); resp.StatusCode != 200 || !strings.Contains(body, "gatewayd_") {
		t.Errorf("GET /metrics without the token, metrics_public = %d %.200s, want 200", resp.StatusCode, body)
	}
	if resp, _ := (rawCall{method: "GET", path: "/api/lanes"}).do(t, api.Base); resp.StatusCode != 401 {
		t.Errorf("GET /api/lanes without the token, metrics_public = %d, want 401", resp.StatusCode)
	}
	if code := public.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d", code)
	}
}
