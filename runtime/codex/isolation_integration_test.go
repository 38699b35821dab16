package codex_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// isoWorld is a daemon's layout in miniature: a state directory with the
// database, a config directory with the environment file, CODEX_HOME with
// the credentials, and two lanes, each with a working directory, a files
// directory and a temporary directory of its own.
type isoWorld struct {
	state, db, wal, configDir, envFile, home, auth string
	lanes                                          map[string]isoLane
}

type isoLane struct{ work, files, tmp, ownFile, upload string }

func newIsoWorld(t *testing.T) isoWorld {
	t.Helper()
	root := t.TempDir()
	w := isoWorld{state: filepath.Join(root, "state"), configDir: codextest.EtcDir(t), home: codextest.Home(t),
		lanes: map[string]isoLane{}}
	w.db, w.wal = filepath.Join(w.state, "gatewayd.db"), filepath.Join(w.state, "gatewayd.db-wal")
	w.envFile, w.auth = filepath.Join(w.configDir, "gatewayd.env"), filepath.Join(w.home, "auth.json")
	writeFile(t, w.db, "SECRET-DB my diary: A's message")
	writeFile(t, w.wal, "SECRET-WAL")
	writeFile(t, w.envFile, "GATEWAYD_TELEGRAM_TOKEN=SECRET-TOKEN")
	writeFile(t, w.auth, `{"OPENAI_API_KEY":"SECRET-AUTH"}`)
	for _, name := range []string{"A", "B"} {
		dir := filepath.Join(w.state, "lanes", name)
		l := isoLane{work: filepath.Join(dir, "work"), files: filepath.Join(w.state, "files", name), tmp: filepath.Join(dir, "tmp")}
		l.ownFile, l.upload = filepath.Join(l.work, "own.txt"), filepath.Join(l.files, "upload.txt")
		writeFile(t, l.ownFile, "OWN-"+name)
		writeFile(t, l.upload, "UPLOAD-"+name)
		if err := os.MkdirAll(l.tmp, 0o700); err != nil {
			t.Fatal(err)
		}
		w.lanes[name] = l
	}
	return w
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// denied is what the daemon denies to every lane (daemon.DeniedToLanes).
func (w isoWorld) denied() []string { return []string{w.state, w.configDir, w.home} }

// confine is what the gateway sends for lane name.
func (w isoWorld) confine(name string) codex.ThreadConfig {
	l := w.lanes[name]
	return codex.ThreadConfig{Cwd: l.work, ApprovalPolicy: "never", Confine: codex.Confinement{
		Profile: codex.LaneProfile, Roots: []string{l.work, l.files, l.tmp},
		Env: map[string]string{"TMPDIR": l.tmp, "HOME": l.tmp}}}
}

// startIsolated starts a client whose lanes are confined as gatewayd's are
// with codex.isolation: lanes (the harness's process-wide sandbox mode is
// left out, as a user's codex.args would not have it).
func startIsolated(t *testing.T, m *codextest.Model, w isoWorld) *codex.Client {
	t.Helper()
	return startClient(t, m, w.home, func(o *codex.Options) {
		o.Args = append(codextest.SandboxArgs(m.URL), codex.IsolationArgs(codex.CodexDir(codextest.CodexBinary(t)), true, w.denied(), nil)...)
	})
}

// runProbe runs cmd as the model's exec_command in the thread and returns
// what the command printed.
func runProbe(t *testing.T, ctx context.Context, c *codex.Client, th string, cfg codex.ThreadConfig, cmd string) string {
	t.Helper()
	res, err := c.RunTurn(ctx, th, codex.TurnInput{Text: "PROBE\n" + cmd, Confine: cfg.Confine}, codex.TurnEvents{})
	if err != nil || res.Status != codex.TurnCompleted {
		t.Fatalf("probe turn: %+v, %v", res, err)
	}
	if !strings.Contains(res.Text, "PROBE-DONE") {
		t.Fatalf("the probe did not run to its end: %q", res.Text)
	}
	return res.Text
}

func probeModel(t *testing.T) *codextest.Model {
	m := codextest.NewModel(t)
	m.Respond(func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp {
			if cmd, ok := strings.CutPrefix(req.LastUserText(), "PROBE\n"); ok {
				return codextest.Reply{ToolCall: codextest.ExecCommand("call_probe", cmd)}
			}
		}
		return codextest.DefaultReply(req)
	})
	return m
}

// Lane B's command cannot read lane A's message (the database and its
// WAL), A's uploaded file and working directory, A's rollout, the config
// directory and its environment file, or CODEX_HOME's credentials; its
// writes outside its own directories reach nothing. Lane A reads its own
// files and writes its directory. The same holds after the app-server is
// replaced and the threads resumed: the confinement is not per-process.
func TestIntegrationLanesAreIsolated(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	w := newIsoWorld(t)
	m := probeModel(t)
	c := startIsolated(t, m, w)
	a, b := w.lanes["A"], w.lanes["B"]

	thA, err := c.EnsureThread(ctx, "", w.confine("A"))
	if err != nil {
		t.Fatal(err)
	}
	newA := filepath.Join(a.work, "new.txt")
	outA := runProbe(t, ctx, c, thA.ThreadID, w.confine("A"), codextest.Probe([]string{a.ownFile, a.upload}, []string{newA, filepath.Join(a.files, "out.txt"), filepath.Join(a.tmp, "t")}, nil))
	for _, want := range []string{"READ " + a.ownFile + ": OWN-A", "READ " + a.upload + ": UPLOAD-A"} {
		if !strings.Contains(outA, want) {
			t.Errorf("lane A: want %q in\n%s", want, outA)
		}
	}
	for _, p := range []string{newA, filepath.Join(a.files, "out.txt"), filepath.Join(a.tmp, "t")} {
		if got, err := os.ReadFile(p); err != nil || strings.TrimSpace(string(got)) != "WRITTEN" {
			t.Errorf("lane A could not write its own %s: %q, %v", p, got, err)
		}
	}
	rollout := rolloutOf(t, w.home, thA.ThreadID)

	secrets := []string{w.db, w.wal, a.ownFile, a.upload, a.work, rollout, filepath.Join(w.home, "sessions"),
		w.auth, w.envFile, w.configDir}
	escapes := []string{filepath.Join(w.state, "escape.txt"), filepath.Join(a.work, "escape.txt"),
		filepath.Join(w.home, "escape.txt"), filepath.Join(w.configDir, "escape.txt")}
	// The state directory is the way down to B's own directories.
	confined := codextest.Confined{Secrets: secrets, Words: []string{"SECRET-", "OWN-A", "UPLOAD-A"},
		Dir: w.state, Allowed: []string{"lanes", "files"}, Escapes: escapes}
	checkB := func(when string, c *codex.Client, th string) {
		t.Helper()
		out := runProbe(t, ctx, c, th, w.confine("B"), codextest.Probe(append([]string{b.ownFile}, secrets...), escapes, []string{w.state}))
		if !strings.Contains(out, "READ "+b.ownFile+": OWN-B") {
			t.Errorf("%s: lane B cannot read its own file:\n%s", when, out)
		}
		for _, leak := range confined.Leaks(out) {
			t.Errorf("%s: lane B's command %s:\n%s", when, leak, out)
		}
	}
	thB, err := c.EnsureThread(ctx, "", w.confine("B"))
	if err != nil {
		t.Fatal(err)
	}
	checkB("live", c, thB.ThreadID)

	closeClient(t, c)
	c2 := startIsolated(t, m, w)
	got, err := c2.EnsureThread(ctx, thB.ThreadID, w.confine("B"))
	if err != nil || got.Outcome != codex.OutcomeResumed {
		t.Fatalf("resume B: %+v, %v", got, err)
	}
	checkB("resumed", c2, thB.ThreadID)
}

// rolloutOf finds the thread's rollout file in CODEX_HOME/sessions.
func rolloutOf(t *testing.T, home, threadID string) string {
	t.Helper()
	var found string
	_ = filepath.WalkDir(filepath.Join(home, "sessions"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(d.Name(), threadID) {
			found = p
		}
		return nil
	})
	if found == "" {
		t.Fatalf("no rollout of %s under %s", threadID, home)
	}
	return found
}

// Exec runs a command under the lane profile the way doctor's probe does:
// it cannot read the database; without the profile it can.
func TestIntegrationExecUnderTheLaneProfile(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	w := newIsoWorld(t)
	c := startIsolated(t, codextest.NewModel(t), w)
	lane := w.lanes["B"].work
	confined, err := c.Exec(ctx, []string{"cat", w.db}, lane, codex.LaneProfile)
	if err != nil {
		t.Fatal(err)
	}
	if confined.ExitCode == 0 || strings.Contains(confined.Stdout, "SECRET") {
		t.Errorf("confined cat of the database: %+v", confined)
	}
	own, err := c.Exec(ctx, []string{"cat", w.lanes["B"].ownFile}, lane, codex.LaneProfile)
	if err != nil || own.ExitCode != 0 || !strings.Contains(own.Stdout, "OWN-B") {
		t.Errorf("confined cat of the lane's own file: %+v, %v", own, err)
	}
}
