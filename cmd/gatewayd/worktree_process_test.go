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
