package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// The real thing, as a process: the built binary with the API
// lane, the real codex app-server and the fake model; kill -9 mid-turn,
// restart, one cut-off notice, context intact; SIGTERM exits 0 within the
// drain timeout and leaves no app-server behind.
func TestProcessKillNineAndRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the daemon")
	}
	codexBin := codextest.CodexBinary(t)
	model := codextest.NewModel(t)
	bin := buildDaemon(t)
	home := codextest.Home(t)
	dir := t.TempDir()
	addr := freeAddr(t)
	drain := 5 * time.Second
	cfgFile := writeProcessConfig(t, dir, map[string]any{
		"state_dir": filepath.Join(dir, "state"),
		"log":       map[string]any{"level": "debug", "format": "json"},
		"codex": map[string]any{
			"command": codexBin, "args": codextest.Args(model.URL), "home": home,
			"cwd": filepath.Join(dir, "work"), "sandbox": "danger-full-access",
			"start_timeout": "60s",
		},
		"api":      map[string]any{"listen": addr, "token": "test-token"},
		"shutdown": map[string]any{"drain_timeout": drain.String()},
	})
	notify := listenNotify(t)
	api := &client.API{Base: "http://" + addr, Token: "test-token", HTTP: &http.Client{Timeout: 2 * time.Minute}}

	// 1. Start, wait for readiness, give the lane something to remember.
	d1 := startDaemon(t, bin, cfgFile, dir, "run1", notify.path)
	waitHealthy(t, api, d1)
	if reply := postMessage(t, api, "proc", "remember the number 4217"); !strings.Contains(reply, "4217") {
		t.Fatalf("first reply %q does not echo the message", reply)
	}

	// 2. A turn that hangs in the model; kill -9 the daemon while it runs.
	model.Respond(func(req codextest.Request) codextest.Reply {
		if strings.Contains(req.LastUserText(), "HANG") {
			return codextest.Reply{HangBeforeHeaders: true}
		}
		return codextest.DefaultReply(req)
	})
	before := len(model.Requests())
	go func() { _, _ = tryPostMessage(api, "proc", "HANG until killed") }() // fails when the daemon dies
	waitCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := model.WaitRequests(waitCtx, before+1); err != nil {
		t.Fatalf("the hanging turn never reached the model: %v\n%s", err, d1.logs())
	}
	d1.kill9(t)
	model.Respond(nil)

	// 3. Restart: the lane hears once that its turn was cut off, and the
	// next message is answered with the earlier context in the request.
	d2 := startDaemon(t, bin, cfgFile, dir, "run2", notify.path)
	waitHealthy(t, api, d2)
	// The API lane has no open request at start-up, so the platform holds
	// the notice for the lane's next request: one recovered cut-off, one
	// notice held, and the next answer carries it.
	waitLogEvents(t, d2, "api.notice_held", func(e map[string]any) bool {
		return e["lane"] == "proc" && e["kind"] == "notice"
	})
	if n := len(logEvents(d2, "recover.cut_off", laneIs("v1:api:proc"))); n != 1 {
		t.Errorf("recover.cut_off events for the lane = %d, want 1", n)
	}
	n := len(model.Requests())
	answer := post(t, api, "proc", "what number did I ask you to remember?")
	if answer.Reply == "" {
		t.Fatal("no reply after the restart")
	}
	cutOffs := 0
	for _, notice := range answer.Notices {
		if notice == gateway.CutOffNotice("HANG until killed") { // names the message
			cutOffs++
		}
	}
	if cutOffs != 1 {
		t.Errorf("the lane's first answer after the restart carried notices %q, want the cut-off notice once", answer.Notices)
	}
	reqs := model.Requests()[n:]
	var last codextest.Request
	for _, r := range reqs {
		if strings.Contains(r.LastUserText(), "what number") {
			last = r
		}
	}
	if !strings.Contains(last.InputText(), "remember the number 4217") {
		t.Errorf("the model's request after the restart lacks the earlier context:\n%s", last.InputText())
	}

	// /retry, sent after the answer that carried the notice, reruns the
	// message the notice names, not that answer's message; a
	// second /retry has nothing left to run.
	n = len(model.Requests())
	if reply := postMessage(t, api, "proc", "/retry"); !strings.Contains(reply, "HANG until killed") {
		t.Errorf("/retry after the restart answered %q, want the cut-off message run", reply)
	}
	rerun := model.Requests()[n:]
	hangs, numbers := 0, 0
	for _, r := range rerun {
		if strings.Contains(r.LastUserText(), "HANG until killed") {
			hangs++
		}
		if strings.Contains(r.LastUserText(), "what number") {
			numbers++
		}
	}
	if hangs != 1 || numbers != 0 {
		t.Errorf("/retry sent the model %d requests with the cut-off message and %d with the later one, want 1 and 0", hangs, numbers)
	}
	n = len(model.Requests())
	if reply := postMessage(t, api, "proc", "/retry"); !strings.HasPrefix(reply, "Nothing to retry") || len(model.Requests()) != n {
		t.Errorf("second /retry answered %q and reached the model, want Nothing to retry and no request", reply)
	}

	// `gatewayd chat` streams a reply from the real API, and commands work.
	var chatOut, chatErr bytes.Buffer
	std := cli.Stdio{In: strings.NewReader("hello from the terminal\n/help\n"), Out: &chatOut, Err: &chatErr}
	if err := client.Talk(context.Background(), api, "chatlane", "tester", std); err != nil {
		t.Fatalf("chat: %v\n%s", err, chatErr.String())
	}
	if out := chatOut.String(); !strings.Contains(out, "ECHO: hello from the terminal\n") || !strings.Contains(out, "/reset") {
		t.Errorf("chat output lacks the streamed reply or the /help answer:\n%s", out)
	}

	// 4. SIGTERM: exit 0 within the drain timeout, no app-server left. The
	// second run first proves its watchdog pings.
	notify.waitFor(t, "WATCHDOG=1 after the second READY=1", func(states []string) bool {
		s := strings.Join(states, " ")
		return strings.Count(s, "READY=1") == 2 && strings.Contains(s[strings.LastIndex(s, "READY=1"):], "WATCHDOG=1")
	})
	// A turn still runs when SIGTERM arrives: it gets the drain timeout,
	// then it is interrupted (and journaled for the next start).
	model.Respond(func(req codextest.Request) codextest.Reply {
		if strings.Contains(req.LastUserText(), "HANG") {
			return codextest.Reply{HangBeforeHeaders: true}
		}
		return codextest.DefaultReply(req)
	})
	before = len(model.Requests())
	go func() { _, _ = tryPostMessage(api, "proc", "HANG through the shutdown") }()
	if _, err := model.WaitRequests(waitCtx, before+1); err != nil {
		t.Fatalf("the second hanging turn never reached the model: %v", err)
	}
	start := time.Now()
	code := d2.terminate(t, drain+20*time.Second)
	if code != 0 {
		t.Errorf("exit code after SIGTERM = %d, want 0\n%s", code, d2.logs())
	}
	took := time.Since(start)
	if took > drain+15*time.Second {
		t.Errorf("shutdown took %v, drain timeout is %v", took, drain)
	}
	if n := len(logEvents(d2, "shutdown.begin", nil)); n != 1 {
		t.Errorf("shutdown.begin logged %d times", n)
	}
	if pids := processesWithEnv("CODEX_HOME=" + home); len(pids) > 0 {
		t.Errorf("app-server processes left behind: %v", pids)
	}
	// systemd saw both starts, watchdog pings, and the stop.
	states := notify.states()
	if got := strings.Join(states, " "); !strings.HasPrefix(got, "READY=1") ||
		strings.Count(got, "READY=1") != 2 || !strings.HasSuffix(got, "STOPPING=1") ||
		!strings.Contains(got, "WATCHDOG=1") {
		t.Errorf("sd_notify states %q: want READY (run 1), READY, WATCHDOG..., STOPPING (run 2)", states)
	}
	t.Logf("kill -9 test: cut-off notices %d, context intact, SIGTERM with a running turn: exit %d in %v (drain %v)", cutOffs, code, took, drain)
}

func buildDaemon(t testing.TB) string {
	t.Helper()
	bin, err := daemonBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// daemonBinary builds the daemon once per test binary: seventeen process
// tests each linked their own copy before. No test writes to it; TestMain
// removes its directory.
var daemonBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "gatewayd-test-bin-")
	if err != nil {
		return "", err
	}
	builtDir = dir
	bin := filepath.Join(dir, "gatewayd")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Env = buildEnv
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, nil
})

// buildEnv is the environment the test binary started with. Tests point
// HOME at a temporary directory (cleanEnv) before the first of them asks
// for the daemon, and a go build there found an empty module and build
// cache: it downloaded every module and compiled everything, three minutes
// of make test.
var buildEnv = os.Environ()

// builtDir is daemonBinary's directory ("" until it ran).
var builtDir string

func freeAddr(t testing.TB) string {
	t.Helper()
	lo := ephemeralStart()
	if lo <= minFixedPort+1000 { // no room below it: the kernel's choice
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		return ln.Addr().String()
	}
	span := int32(lo - minFixedPort)
	for range 500 {
		port := minFixedPort + int((portSeq.Add(1)+int32(os.Getpid()))%span)
		ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue // in use: the next one
		}
		ln.Close()
		return ln.Addr().String()
	}
	t.Fatal("freeAddr: no free port below the ephemeral range")
	return ""
}

// A daemon's port is picked here and bound by the daemon later. Taken
// from the kernel's ephemeral range, it could be handed meanwhile to
// anything listening on port 0 (a fake model, another test's server), and
// the daemon's probes would reach that; below the range only freeAddr
// hands ports out, each once per process.
const minFixedPort = 20000

var portSeq atomic.Int32

// ephemeralStart is the first port the kernel hands out for port 0
// (32768 when it cannot be read).
func ephemeralStart() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 32768
	}
	n, err := strconv.Atoi(fields[0])
	if err != nil {
		return 32768
	}
	return n
}

func writeProcessConfig(t testing.TB, dir string, cfg map[string]any) string {
	t.Helper()
	// JSON is YAML; viper reads the file as YAML.
	b, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "gatewayd.yaml")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// daemonProc is one run of the binary.
type daemonProc struct {
	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	out  bytes.Buffer
	// logged wakes the tests waiting for a log line each time one arrives.
	logged poll.Broadcast
}

func (d *daemonProc) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	defer d.logged.Notify()
	return d.out.Write(p)
}

func (d *daemonProc) logs() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.out.String()
}

func startDaemon(t testing.TB, bin, cfgFile, dir, name, notifySocket string) *daemonProc {
	t.Helper()
	return startDaemonWith(t, bin, cfgFile, dir, name, notifySocket, (*exec.Cmd).Start)
}

// startDaemonWith is startDaemon with its own way to start the process.
func startDaemonWith(t testing.TB, bin, cfgFile, dir, name, notifySocket string, start func(*exec.Cmd) error) *daemonProc {
	t.Helper()
	d := &daemonProc{done: make(chan struct{})}
	d.cmd = exec.Command(bin, "run", "--config", cfgFile)
	d.cmd.Dir = dir
	d.cmd.Env = append(daemonEnv(), codextest.Env()...)
	// A 2s watchdog: pings every second while the probe passes.
	d.cmd.Env = append(d.cmd.Env, "NOTIFY_SOCKET="+notifySocket, "WATCHDOG_USEC=2000000")
	d.cmd.Stdout, d.cmd.Stderr = d, d
	if err := start(d.cmd); err != nil {
		t.Fatal(err)
	}
	go func() { _ = d.cmd.Wait(); close(d.done) }()
	t.Cleanup(func() {
		select {
		case <-d.done:
		default:
			_ = d.cmd.Process.Kill()
			<-d.done
		}
		if t.Failed() {
			t.Logf("%s logs:\n%s", name, d.logs())
		}
	})
	return d
}

// daemonEnv is the test's environment without GATEWAYD_* keys and without
// systemd's notify socket.
func daemonEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GATEWAYD_") || strings.HasPrefix(name, "WATCHDOG_") ||
			name == "NOTIFY_SOCKET" || name == "CODEX_HOME" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

func (d *daemonProc) kill9(t *testing.T) {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-d.done
}

func (d *daemonProc) terminate(t testing.TB, limit time.Duration) int {
	t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-d.done:
		return d.cmd.ProcessState.ExitCode()
	case <-time.After(limit):
		t.Fatalf("no exit %v after SIGTERM\n%s", limit, d.logs())
		return -1
	}
}

// waitHealthy polls /healthz: the daemon has no other signal to give.
func waitHealthy(t testing.TB, api *client.API, d *daemonProc) {
	t.Helper()
	exited := false
	healthy := poll.Wait(90*time.Second, d.logged.Wait, func() bool {
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
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	switch {
	case exited:
		t.Fatalf("daemon exited before it was healthy:\n%s", d.logs())
	case !healthy:
		t.Fatalf("/healthz never answered 200:\n%s", d.logs())
	}
}

func tryPostMessage(api *client.API, lane, text string) (string, error) {
	r, err := tryPost(api, lane, text)
	return r.Reply, err
}

// chatResult is the API's answer to a message, as the tests read it.
type chatResult struct {
	Reply   string   `json:"reply"`
	Status  string   `json:"status"`
	Notices []string `json:"notices"`
}

// tryPost sends one message and returns the whole answer (reply and the
// lane notices that rode on it).
func tryPost(api *client.API, lane, text string) (chatResult, error) {
	var r chatResult
	req, err := api.Request(context.Background(), http.MethodPost, "/api/lanes/"+lane+"/messages",
		map[string]string{"text": text, "user": "tester"})
	if err != nil {
		return r, err
	}
	resp, err := api.Send(req)
	if err != nil {
		return r, err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return r, fmt.Errorf("status %s: %s", resp.Status, body)
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("decode %q: %w", body, err)
	}
	return r, nil
}

func postMessage(t *testing.T, api *client.API, lane, text string) string {
	t.Helper()
	return post(t, api, lane, text).Reply
}

func post(t *testing.T, api *client.API, lane, text string) chatResult {
	t.Helper()
	r, err := tryPost(api, lane, text)
	if err != nil {
		t.Fatalf("post %q: %v", text, err)
	}
	return r
}

// logEvents returns the daemon's JSON log entries for event that match.
func logEvents(d *daemonProc, event string, match func(map[string]any) bool) []map[string]any {
	var out []map[string]any
	for _, line := range strings.Split(d.logs(), "\n") {
		var e map[string]any
		if json.Unmarshal([]byte(line), &e) != nil || e["event"] != event {
			continue
		}
		if match == nil || match(e) {
			out = append(out, e)
		}
	}
	return out
}

// waitLogEvents waits until event is logged (the outbox delivers
// asynchronously and logs are the only signal), then returns the matches;
// none if it is not logged within 30s.
func waitLogEvents(t *testing.T, d *daemonProc, event string, match func(map[string]any) bool) []map[string]any {
	t.Helper()
	return waitLogged(d, event, match, 1, 30*time.Second)
}

// waitLogged waits until event is logged n times, woken by each write to
// the log, and returns the matches it has then.
func waitLogged(d *daemonProc, event string, match func(map[string]any) bool, n int, within time.Duration) []map[string]any {
	var got []map[string]any
	poll.Wait(within, d.logged.Wait, func() bool {
		got = logEvents(d, event, match)
		return len(got) >= n
	})
	return got
}

func laneIs(key string) func(map[string]any) bool {
	return func(e map[string]any) bool { return e["lane"] == key }
}

// processesWithEnv scans /proc for processes whose environment holds kv.
func processesWithEnv(kv string) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for _, v := range bytes.Split(env, []byte{0}) {
			if string(v) == kv {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// notifyListener records the sd_notify datagrams of the daemon runs.
type notifyListener struct {
	path    string
	mu      sync.Mutex
	got     []string
	changed chan struct{} // closed and replaced on every datagram
}

func listenNotify(t testing.TB) *notifyListener {
	t.Helper()
	n := &notifyListener{path: filepath.Join(t.TempDir(), "notify.sock"), changed: make(chan struct{})}
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: n.path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 4096)
		for {
			k, err := conn.Read(buf)
			if err != nil {
				return
			}
			for _, line := range strings.Split(strings.TrimSpace(string(buf[:k])), "\n") {
				if !strings.HasPrefix(line, "STATUS=") {
					n.mu.Lock()
					n.got = append(n.got, line)
					close(n.changed)
					n.changed = make(chan struct{})
					n.mu.Unlock()
				}
			}
		}
	}()
	return n
}

func (n *notifyListener) states() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.got...)
}

// waitFor blocks until the recorded states satisfy ok.
func (n *notifyListener) waitFor(t testing.TB, what string, ok func([]string) bool) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		n.mu.Lock()
		got, changed := append([]string(nil), n.got...), n.changed
		n.mu.Unlock()
		if ok(got) {
			return
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("sd_notify: no %s; states %q", what, got)
		}
	}
}
