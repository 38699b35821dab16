package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/internal/processtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// peerChildEnv makes the test binary a tiny HTTP client (TestMain): it reads
// []peerCall on stdin, makes each request and writes []peerResult on stdout.
// The tests start it as another user, so the daemon sees a connection from
// that user's socket, as it would see curl run by them.
const peerChildEnv = "GATEWAYD_TEST_PEER_CHILD"

type peerCall struct {
	Method, URL, Token, Body string
}

type peerResult struct {
	Code int
	Body string
	Err  string
}

// peerChild is the child's whole program; it returns the exit code.
func peerChild() int {
	var calls []peerCall
	if err := json.NewDecoder(os.Stdin).Decode(&calls); err != nil {
		os.Stderr.WriteString("peer child: " + err.Error() + "\n")
		return 2
	}
	client := &http.Client{Timeout: time.Minute}
	results := make([]peerResult, 0, len(calls))
	for _, c := range calls {
		results = append(results, c.do(client))
	}
	if err := json.NewEncoder(os.Stdout).Encode(results); err != nil {
		return 2
	}
	return 0
}

func (c peerCall) do(client *http.Client) peerResult {
	var body io.Reader
	if c.Method == http.MethodPost {
		body = strings.NewReader(c.Body)
	}
	req, err := http.NewRequest(c.Method, c.URL, body)
	if err != nil {
		return peerResult{Err: err.Error()}
	}
	if c.Method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.Token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return peerResult{Err: err.Error()}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return peerResult{Code: resp.StatusCode, Body: string(b)}
}

// peerClient runs the child as uid/gid, or as this process's user when
// cred is nil.
type peerClient struct {
	bin  string
	cred *syscall.Credential
}

// newPeerClients copies the test binary where uid 65534 can run it (go
// test's build directory is private) and returns the child as nobody and
// as this process's user.
func newPeerClients(t *testing.T) (nobody, self peerClient) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "gatewayd-peer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "peer-client")
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return peerClient{bin: bin, cred: &syscall.Credential{Uid: 65534, Gid: 65534}}, peerClient{bin: bin}
}

// run makes calls from the child and returns its results, one per call.
func (p peerClient) run(t *testing.T, calls []peerCall) []peerResult {
	t.Helper()
	in, err := json.Marshal(calls)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), p.bin)
	cmd.Env = []string{peerChildEnv + "=1", "PATH=/usr/bin:/bin"}
	cmd.Dir = "/"
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if p.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: p.cred}
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("peer child (uid %v): %v\n%s", p.cred, err, stderr.String())
	}
	var results []peerResult
	if err := json.Unmarshal(out, &results); err != nil || len(results) != len(calls) {
		t.Fatalf("peer child answered %q: %v", out, err)
	}
	return results
}

// everyRoute is each route of the listener that shows or changes anything:
// the API lane's, the console's, the admin ones, /metrics and the console's
// own page and files.
func everyRoute() []peerCall {
	return []peerCall{
		{Method: "POST", URL: "/api/lanes/intruder/messages", Body: `{"text":"run id"}`},
		{Method: "GET", URL: "/api/lanes/web/messages/x"},
		{Method: "GET", URL: "/api/lanes/web/approvals"},
		{Method: "POST", URL: "/api/lanes/web/approvals/1", Body: `{"decision":"accept"}`},
		{Method: "GET", URL: "/api/lanes/web/questions"},
		{Method: "POST", URL: "/api/lanes/web/questions/1", Body: `{"answers":{}}`},
		{Method: "GET", URL: "/api/lanes/web/files/1"},
		{Method: "GET", URL: "/api/lanes"},
		{Method: "GET", URL: "/api/lanes/v1:api:web"},
		{Method: "GET", URL: "/api/lanes/v1:api:web/transcript"},
		{Method: "GET", URL: "/api/search?q=hello"},
		{Method: "GET", URL: "/api/status"},
		{Method: "GET", URL: "/api/models"},
		{Method: "GET", URL: "/api/projects"},
		{Method: "GET", URL: "/api/account"},
		{Method: "POST", URL: "/api/account/login", Body: `{}`},
		{Method: "POST", URL: "/api/account/api-key", Body: `{"api_key":"sk-intruder"}`},
		{Method: "GET", URL: "/api/admin/sessions"},
		{Method: "GET", URL: "/api/admin/sessions/v1:api:web"},
		{Method: "POST", URL: "/api/admin/sessions/v1:api:web/reset", Body: `{}`},
		{Method: "GET", URL: "/api/admin/search?q=hello"},
		{Method: "POST", URL: "/api/admin/worktrees/prune", Body: `{}`},
		{Method: "GET", URL: "/metrics"},
		{Method: "GET", URL: "/"},
		{Method: "GET", URL: "/console/app.js"},
	}
}

// at points calls at base, with token.
func at(base, token string, calls []peerCall) []peerCall {
	out := make([]peerCall, len(calls))
	for i, c := range calls {
		c.URL, c.Token = base+c.URL, token
		out[i] = c
	}
	return out
}

func freeAddr6(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback here: %v", err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// peerDaemon is a daemon started for these tests, and how to reach it.
type peerDaemon struct {
	d   *daemonProc
	api *client.API
}

// startPeerDaemon starts the daemon listening on addr with the api section
// given (merged over listen) and the environment added.
func startPeerDaemon(t *testing.T, name, addr string, apiCfg map[string]any, env ...string) peerDaemon {
	t.Helper()
	model := codextest.NewModel(t)
	dir := t.TempDir()
	section := map[string]any{"listen": addr}
	for k, v := range apiCfg {
		section[k] = v
	}
	cfgFile := processConfig(t, dir, addr, model, map[string]any{"api": section})
	token, _ := apiCfg["token"].(string)
	d := startDaemonWith(t, buildDaemon(t), cfgFile, dir, name, listenNotify(t).path, func(c *exec.Cmd) error {
		c.Env = append(c.Env, env...)
		return c.Start()
	})
	return peerDaemon{d: d, api: &client.API{Base: "http://" + addr, Token: token, HTTP: &http.Client{Timeout: 2 * time.Minute}}}
}

// with no api.Token, another local user (uid 65534, nobody) gets
// 401 on every route of the loopback listener but /healthz, over 127.0.0.1
// and [::1], and its message runs nothing; the daemon's own user (here root,
// as the tests run) is served as before, with no token; with a token set,
// nobody with the token is served; a member of api.allow_group is served
// without one.
func TestProcessOtherLocalUsersNeedTheToken(t *testing.T) {
	processtest.SkipWhenShort(t, "builds and runs the daemon, and a client as another user")
	if os.Geteuid() != 0 {
		t.Skip("needs root: the client runs as uid 65534 (setuid), which only root may do")
	}
	nobody, self := newPeerClients(t)
	v4 := startPeerDaemon(t, "no-token-v4", freeAddr(t), nil)
	v6 := startPeerDaemon(t, "no-token-v6", freeAddr6(t), nil)
	for _, pd := range []peerDaemon{v4, v6} {
		waitHealthy(t, pd.api, pd.d)
		if reply := postMessage(t, pd.api, "web", "hello"); reply != "ECHO: hello" {
			t.Fatalf("%s: the daemon's own user: reply %q", pd.api.Base, reply)
		}
		routes := everyRoute()
		calls := append(at(pd.api.Base, "", routes), peerCall{Method: "GET", URL: pd.api.Base + "/healthz"})
		got := nobody.run(t, calls)
		for i, r := range got[:len(routes)] {
			if r.Code != http.StatusUnauthorized || !strings.Contains(r.Body, "uid 65534") {
				t.Errorf("uid 65534 %s %s = %d %s %.200s, want 401 naming the uid", calls[i].Method, calls[i].URL, r.Code, r.Err, r.Body)
			}
		}
		if h := got[len(routes)]; h.Code != http.StatusOK {
			t.Errorf("uid 65534 GET %s/healthz = %d %s, want 200", pd.api.Base, h.Code, h.Err)
		}
		// The same child as the daemon's own user: served, without a token.
		mine := self.run(t, at(pd.api.Base, "", []peerCall{{Method: "GET", URL: "/api/lanes"},
			{Method: "GET", URL: "/api/admin/sessions"}, {Method: "GET", URL: "/metrics"}, {Method: "GET", URL: "/"}}))
		for _, r := range mine {
			if r.Code != http.StatusOK {
				t.Errorf("the daemon's own uid via %s: %d %s %.200s, want 200", pd.api.Base, r.Code, r.Err, r.Body)
			}
		}
		if lanes := laneKeys(t, pd.api); strings.Contains(lanes, "intruder") {
			t.Errorf("uid 65534's refused message made a lane: %s", lanes)
		}
	}
	for _, pd := range []peerDaemon{v4, v6} {
		if code := pd.d.terminate(t, 30*time.Second); code != 0 {
			t.Errorf("%s: exit after SIGTERM = %d", pd.api.Base, code)
		}
	}

	const token = "peer-tok"
	withToken := startPeerDaemon(t, "token", freeAddr(t), map[string]any{"token": token})
	var group peerDaemon
	groupName := nobodyGroup(t)
	if groupName != "" {
		group = startPeerDaemon(t, "allow-group", freeAddr6(t), nil, "GATEWAYD_API_ALLOW_GROUP="+groupName)
	}
	waitHealthy(t, withToken.api, withToken.d)
	got := nobody.run(t, append(at(withToken.api.Base, token, []peerCall{{Method: "GET", URL: "/api/lanes"},
		{Method: "POST", URL: "/api/lanes/web/messages", Body: `{"text":"hi"}`}, {Method: "GET", URL: "/metrics"}}),
		peerCall{Method: "GET", URL: withToken.api.Base + "/api/lanes"}))
	for i, r := range got[:3] {
		if r.Code != http.StatusOK {
			t.Errorf("uid 65534 with the token, call %d = %d %s %.200s, want 200", i, r.Code, r.Err, r.Body)
		}
	}
	if r := got[3]; r.Code != http.StatusUnauthorized {
		t.Errorf("uid 65534 without the token, token set = %d, want 401", r.Code)
	}
	if groupName == "" {
		t.Log("no group for uid 65534 here: api.allow_group not tried")
		return
	}
	waitHealthy(t, group.api, group.d)
	if r := nobody.run(t, at(group.api.Base, "", []peerCall{{Method: "GET", URL: "/api/lanes"}}))[0]; r.Code != http.StatusOK {
		t.Errorf("uid 65534 in api.allow_group %s = %d %s %.200s, want 200", groupName, r.Code, r.Err, r.Body)
	}
}

// nobodyGroup is the name of uid 65534's group, "" when the machine has no
// such user or group.
func nobodyGroup(t *testing.T) string {
	t.Helper()
	if _, err := user.LookupId("65534"); err != nil {
		return ""
	}
	g, err := user.LookupGroupId("65534")
	if err != nil {
		return ""
	}
	return g.Name
}

// laneKeys lists the daemon's lanes as the daemon's own user sees them.
func laneKeys(t *testing.T, api *client.API) string {
	t.Helper()
	resp, body := (rawCall{method: "GET", path: "/api/lanes", token: api.Token}).do(t, api.Base)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/lanes = %d %s", resp.StatusCode, body)
	}
	return body
}
