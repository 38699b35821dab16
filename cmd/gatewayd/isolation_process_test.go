package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/internal/processtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// isolatedDaemon is a daemon in the systemd layout in miniature: the
// config file and its environment file in one directory, the state
// directory in another, CODEX_HOME with credentials in a third, and
// codex.isolation left at its default (lanes).
type isolatedDaemon struct {
	bin, dir, cfgFile, state, etc, envFile, home, auth string
	api                                                *client.API
	model                                              *codextest.Model
}

// newIsolatedDaemon makes the daemon's layout; each edit adjusts its
// configuration before it is written.
func newIsolatedDaemon(t *testing.T, edits ...func(cfg map[string]any)) *isolatedDaemon {
	t.Helper()
	d := &isolatedDaemon{bin: buildDaemon(t), dir: t.TempDir(), home: codextest.Home(t), model: codextest.NewModel(t)}
	// The config directory under /etc, as in the systemd layout: codex's
	// sandbox grants every command the system paths, /etc among them.
	d.state, d.etc = filepath.Join(d.dir, "state"), codextest.EtcDir(t)
	d.envFile, d.auth = filepath.Join(d.etc, "gatewayd.env"), filepath.Join(d.home, "auth.json")
	writeSecret(t, d.envFile, "GATEWAYD_TELEGRAM_TOKEN=SECRET-TOKEN\n")
	writeSecret(t, d.auth, `{"OPENAI_API_KEY":"SECRET-AUTH"}`)
	// PROBE\n<cmd>: the model runs <cmd> as one exec_command, then echoes
	// its output ("TOOL OUTPUT: ...").
	d.model.Respond(func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp {
			if cmd, ok := strings.CutPrefix(req.LastUserText(), "PROBE\n"); ok {
				return codextest.Reply{ToolCall: codextest.ExecCommand("call_probe", cmd)}
			}
		}
		return codextest.DefaultReply(req)
	})
	addr := freeAddr(t)
	cfg := map[string]any{
		"state_dir": d.state,
		"log":       map[string]any{"level": "debug", "format": "json"},
		"codex": map[string]any{
			"command": codextest.CodexBinary(t), "args": codextest.SandboxArgs(d.model.URL), "home": d.home,
			"start_timeout": "60s",
		},
		"api": map[string]any{"listen": addr, "token": "SECRET-APITOKEN"},
	}
	for _, edit := range edits {
		edit(cfg)
	}
	d.cfgFile = writeProcessConfig(t, d.etc, cfg)
	d.api = &client.API{Base: "http://" + addr, Token: "SECRET-APITOKEN", HTTP: &http.Client{Timeout: 2 * time.Minute}}
	return d
}

func writeSecret(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func (d *isolatedDaemon) start(t *testing.T, name string) *daemonProc {
	t.Helper()
	p := startDaemon(t, d.bin, d.cfgFile, d.dir, name, listenNotify(t).path)
	waitHealthy(t, d.api, p)
	return p
}

// workDir is where the project-less lane works: its own directory under
// codex.cwd's default.
func (d *isolatedDaemon) workDir(lane string) string {
	return files.WorkDir(filepath.Join(d.state, "workspace"), "v1:api:"+lane)
}

// upload sends one file to lane as the API's multipart form and returns
// where the daemon stored it.
func (d *isolatedDaemon) upload(t *testing.T, lane, name, body string) string {
	t.Helper()
	var form bytes.Buffer
	w := multipart.NewWriter(&form)
	_ = w.WriteField("text", "keep this file")
	_ = w.WriteField("user", "tester")
	part, err := w.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.WriteString(part, body)
	_ = w.Close()
	req, err := http.NewRequestWithContext(context.Background(), http.MethodPost, d.api.Base+"/api/lanes/"+lane+"/messages", &form)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", w.FormDataContentType())
	req.Header.Set("Authorization", "Bearer "+d.api.Token)
	resp, err := d.api.Send(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var r chatResult
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &r) != nil {
		t.Fatalf("upload: %s: %s", resp.Status, raw)
	}
	var stored string
	_ = filepath.WalkDir(filepath.Join(d.state, "files"), func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() && e.Name() == name {
			stored = p
		}
		return nil
	})
	if stored == "" || !strings.Contains(r.Reply, stored) {
		t.Fatalf("upload stored at %q; the turn was told %q", stored, r.Reply)
	}
	return stored
}

// probeLane runs cmd on lane as the model's command and returns what it
// printed, after the probe's own marker.
func (d *isolatedDaemon) probeLane(t *testing.T, lane, cmd string) string {
	t.Helper()
	reply := postMessage(t, d.api, lane, "PROBE\n"+cmd)
	if !strings.Contains(reply, "PROBE-DONE") {
		t.Fatalf("the probe on lane %s did not run to its end: %q", lane, reply)
	}
	return reply
}

// With codex.isolation at its default, a command on lane B cannot read
// lane A's message (the database, its WAL, A's rollout in CODEX_HOME), A's
// uploaded file or working directory, the config file, its directory and
// the environment file beside it, or CODEX_HOME's credentials, and cannot
// write outside its own directories; lane A reads its own file and writes
// its own directory; the two project-less lanes work in different
// directories. After a restart, B's resumed thread is as confined.
func TestProcessLanesAreIsolated(t *testing.T) {
	processtest.SkipWhenShort(t, "the daemon with the real app-server and its sandbox")
	d := newIsolatedDaemon(t)
	p1 := d.start(t, "run1")

	if reply := postMessage(t, d.api, "A", "my diary: SECRET-DIARY"); !strings.Contains(reply, "SECRET-DIARY") {
		t.Fatalf("lane A's first reply %q", reply)
	}
	uploadA := d.upload(t, "A", "upload.txt", "UPLOAD-A")
	workA, workB := d.workDir("A"), d.workDir("B")
	ownA := filepath.Join(workA, "own.txt")
	outA := d.probeLane(t, "A", "pwd; "+codextest.Probe([]string{uploadA}, []string{ownA}, nil))
	if !strings.Contains(outA, "READ "+uploadA+": UPLOAD-A") {
		t.Errorf("lane A cannot read its own upload:\n%s", outA)
	}
	if !strings.Contains(outA, workA) {
		t.Errorf("lane A does not work in its own directory %s:\n%s", workA, outA)
	}
	if got, err := os.ReadFile(ownA); err != nil || strings.TrimSpace(string(got)) != "WRITTEN" {
		t.Errorf("lane A could not write its own directory: %q, %v", got, err)
	}
	rolloutA := rolloutWith(t, d.home, "SECRET-DIARY")

	secrets := []string{filepath.Join(d.state, "gatewayd.db"), filepath.Join(d.state, "gatewayd.db-wal"),
		uploadA, filepath.Dir(uploadA), workA, ownA, rolloutA, filepath.Join(d.home, "sessions"), d.auth, d.home,
		d.cfgFile, d.envFile, d.etc}
	escapes := []string{filepath.Join(d.state, "escape.txt"), filepath.Join(workA, "escape.txt"),
		filepath.Join(d.home, "escape.txt"), filepath.Join(d.etc, "escape.txt")}
	// The state directory is the way down to B's own directories.
	confined := codextest.Confined{Secrets: secrets, Words: []string{"SECRET-", "UPLOAD-A", "WRITTEN"},
		Dir: d.state, Allowed: []string{"files", "tmp", "workspace"}, Escapes: escapes}
	checkB := func(when string) {
		t.Helper()
		out := d.probeLane(t, "B", "pwd; "+codextest.Probe(secrets, escapes, []string{d.state}))
		t.Logf("%s: lane B's probe printed:\n%s", when, out)
		if !strings.Contains(out, workB) {
			t.Errorf("%s: lane B does not work in its own directory %s:\n%s", when, workB, out)
		}
		for _, leak := range confined.Leaks(out) {
			t.Errorf("%s: lane B's command %s:\n%s", when, leak, out)
		}
	}
	checkB("live")
	if workA == workB {
		t.Fatalf("two project-less lanes share %s", workA)
	}

	if code := p1.terminate(t, time.Minute); code != 0 {
		t.Fatalf("SIGTERM exit code %d", code)
	}
	p2 := d.start(t, "run2")
	checkB("after a restart")
	if n := len(logEvents(p2, "binding.pending", laneIs("v1:api:B"))); n != 0 {
		t.Errorf("lane B started a new thread after the restart; its thread was to be resumed, and confined")
	}
}

// rolloutWith is the rollout file under home that holds text.
func rolloutWith(t *testing.T, home, text string) string {
	t.Helper()
	var found string
	_ = filepath.WalkDir(filepath.Join(home, "sessions"), func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			if b, _ := os.ReadFile(p); bytes.Contains(b, []byte(text)) {
				found = p
			}
		}
		return nil
	})
	if found == "" {
		t.Fatalf("no rollout under %s holds %q", home, text)
	}
	return found
}
