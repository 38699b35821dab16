package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/internal/processtest"
)

// A lane on a git project, with codex.isolation and lanes.worktrees at
// their defaults, works in its own worktree under the state directory: a
// command there runs git on it (history and status, read from the
// repository's .git outside the worktree), writes its files, and cannot
// read or write the checkout's files. Committing is codex's to refuse: its
// sandbox keeps every .git read-only, as in any checkout.
func TestProcessWorktreeLaneRunsGitInsideItsSandbox(t *testing.T) {
	processtest.SkipWhenShort(t, "the daemon with the real app-server and its sandbox")
	repo := filepath.Join(t.TempDir(), "app")
	initRepo(t, repo)
	d := newIsolatedDaemon(t, func(cfg map[string]any) { cfg["projects"] = map[string]any{"app": repo} })
	d.start(t, "run1")

	if reply := postMessage(t, d.api, "A", "/project app"); !strings.Contains(reply, "Project: app") {
		t.Fatalf("/project app answered %q", reply)
	}
	wt := filepath.Join(d.state, "worktrees", files.DirName("v1:api:A"), files.DirName("app"))
	out := d.probeLane(t, "A", "pwd; git log --format=LOG:%s -1; echo lane > lane.txt; git status --porcelain | sed 's/^/STATUS:/'; "+
		"cat '"+filepath.Join(repo, "README")+"' 2>/dev/null; echo x > '"+filepath.Join(repo, "escape.txt")+"' 2>/dev/null; echo PROBE-DONE")
	t.Logf("the lane's probe printed:\n%s", out)
	if !strings.Contains(out, wt) {
		t.Errorf("the lane does not work in its worktree %s", wt)
	}
	if !strings.Contains(out, "LOG:initial") || !strings.Contains(out, "STATUS:?? lane.txt") {
		t.Errorf("git does not work in the lane's worktree")
	}
	if strings.Contains(out, "SECRET-README") {
		t.Error("the lane's command read the checkout")
	}
	if _, err := os.Stat(filepath.Join(repo, "escape.txt")); err == nil {
		t.Error("the checkout was written")
	}
	if got, err := os.ReadFile(filepath.Join(wt, "lane.txt")); err != nil || string(got) != "lane\n" {
		t.Errorf("the lane's file in its worktree: %q, %v", got, err)
	}
}

// initRepo makes a git repository with one commit at dir.
func initRepo(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("SECRET-README\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitOut(t, dir, "init", "-q", "-b", "main")
	gitOut(t, dir, "add", "-A")
	gitOut(t, dir, "commit", "-q", "-m", "initial")
}

func gitOut(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@localhost", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@localhost")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// After a kill -9 of the daemon between a turn and /undo, the next
// daemon's /undo puts the worktree back as it was before the turn (from
// the snapshot ref saved as the turn started) and Codex's next request,
// on the resumed thread, lacks the undone turn.
func TestProcessUndoAfterKill9(t *testing.T) {
	processtest.SkipWhenShort(t, "the daemon with the real app-server, killed and started again")
	repo := filepath.Join(t.TempDir(), "app")
	initRepo(t, repo)
	d := newIsolatedDaemon(t, func(cfg map[string]any) { cfg["projects"] = map[string]any{"app": repo} })
	p := d.start(t, "run1")
	postMessage(t, d.api, "A", "/project app")
	wt := filepath.Join(d.state, "worktrees", files.DirName("v1:api:A"), files.DirName("app"))
	d.probeLane(t, "A", "echo KEPT > kept.txt; echo PROBE-DONE")
	d.probeLane(t, "A", "echo UNDONE > undone.txt; echo KEPT-CHANGED > kept.txt; echo PROBE-DONE")
	p.kill9(t)

	d.start(t, "run2")
	reply := postMessage(t, d.api, "A", "/undo")
	if !strings.Contains(reply, "Undid the last turn") || !strings.Contains(reply, "back as they were before it") {
		t.Fatalf("/undo after kill -9 answered %q", reply)
	}
	if _, err := os.Stat(filepath.Join(wt, "undone.txt")); !os.IsNotExist(err) {
		t.Errorf("undone.txt survived /undo: %v", err)
	}
	if got, err := os.ReadFile(filepath.Join(wt, "kept.txt")); err != nil || string(got) != "KEPT\n" {
		t.Errorf("kept.txt after /undo = %q, %v; want the first turn's", got, err)
	}
	postMessage(t, d.api, "A", "what is left?")
	req, ok := d.model.LastRequestWith("what is left?")
	if !ok {
		t.Fatal("the model got no request after /undo")
	}
	if text := req.InputText(); strings.Contains(text, "UNDONE") || !strings.Contains(text, "kept.txt") {
		t.Errorf("the request after /undo should have the first turn and not the undone one:\n%s", text)
	}
}
