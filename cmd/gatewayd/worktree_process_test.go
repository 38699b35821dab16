package main

import (
	"crypto/sha256"
	"fmt"
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

// A prompt-injected lane on a git project tries to make the daemon's own
// git run its commands: through the real app-server and its
// sandbox, a command in the lane's worktree sets core.fsmonitor, writes
// hooks for every step the daemon's git takes, tries the same in the
// project's own .git, replaces the worktree's .git, and makes a nested
// repository of its own with an fsmonitor and a filter. Then the daemon
// snapshots (the next turn), diffs, undoes and forks. Nothing planted
// runs — no marker appears in a directory no lane can write — the
// project's .git is unchanged, and a second lane on the project can read
// neither the first one's branch nor its snapshots.
func TestProcessLaneCannotPlantGitForTheDaemon(t *testing.T) {
	processtest.SkipWhenShort(t, "the daemon with the real app-server and its sandbox")
	repo := filepath.Join(t.TempDir(), "app")
	initRepo(t, repo)
	d := newIsolatedDaemon(t, func(cfg map[string]any) { cfg["projects"] = map[string]any{"app": repo} })
	d.start(t, "run1")
	marks := t.TempDir() // the daemon's user can write it; no lane can
	before := projectGitState(t, repo)

	postMessage(t, d.api, "A", "/project app")
	wt := filepath.Join(d.state, "worktrees", files.DirName("v1:api:A"), files.DirName("app"))
	touch := func(name string) string { return "touch " + filepath.Join(marks, name) + "; false" }
	hook := func(dir, name string) string {
		return fmt.Sprintf("mkdir -p %s/hooks; printf '#!/bin/sh\\ntouch %s\\n' > %s/hooks/%s; chmod +x %s/hooks/%s; ",
			dir, filepath.Join(marks, "hook-"+name), dir, name, dir, name)
	}
	var plant strings.Builder
	fmt.Fprintf(&plant, "git config core.fsmonitor %q; echo FSMONITOR-RC=$?; ", touch("fsmonitor"))
	fmt.Fprintf(&plant, "git config --file %s/.git/config core.fsmonitor %q; echo PROJECT-RC=$?; ", repo, touch("project-fsmonitor"))
	for _, h := range []string{"post-checkout", "reference-transaction", "post-commit", "pre-commit", "post-index-change"} {
		plant.WriteString(hook(".git", h))
		plant.WriteString(hook(repo+"/.git", "project-"+h))
	}
	plant.WriteString("printf 'gitdir: /tmp\\n' > .git; mv .git .git-moved; echo MOVE-RC=$?; ")
	fmt.Fprintf(&plant, "git init -q sub && echo n > sub/n && git -C sub add -A && git -C sub -c user.name=x -c user.email=x@y commit -qm n && git -C sub config core.fsmonitor %q; ", touch("nested-fsmonitor"))
	fmt.Fprintf(&plant, "git config --file sub/.git/config filter.evil.clean %q; printf '* filter=evil\\n' > .gitattributes; ", touch("filter"))
	plant.WriteString("echo lane-a-secret > secret.txt; echo PROBE-DONE")
	out := d.probeLane(t, "A", plant.String())
	t.Logf("the lane's attempt printed:\n%s", out)
	// The project's .git is not in the sandbox (only its objects, read-only,
	// under an empty skeleton of its parents), so PROJECT-RC says nothing:
	// projectGitState below checks the real one.
	if strings.Contains(out, "FSMONITOR-RC=0") || strings.Contains(out, "MOVE-RC=0") {
		t.Error("a lane's command wrote a git directory it must only read")
	}

	// Everything the daemon runs git for, on the planted worktree.
	postMessage(t, d.api, "A", "a turn: the daemon snapshots the worktree first")
	if reply := postMessage(t, d.api, "A", "/diff"); !strings.Contains(reply, "secret.txt") {
		t.Errorf("/diff answered %q", reply)
	}
	if reply := postMessage(t, d.api, "A", "/undo"); !strings.Contains(reply, "Undid the last turn") {
		t.Errorf("/undo answered %q", reply)
	}
	if reply := postMessage(t, d.api, "A", "/fork"); !strings.Contains(reply, "fork") {
		t.Errorf("/fork answered %q", reply)
	}
	entries, _ := os.ReadDir(marks)
	for _, e := range entries {
		t.Errorf("the daemon's git ran what the lane planted: %s", e.Name())
	}
	if after := projectGitState(t, repo); after != before {
		t.Errorf("the project's .git changed:\nbefore %s\nafter  %s", before, after)
	}

	// Lane B, on the same project, looks for A's work through git.
	postMessage(t, d.api, "B", "/project app")
	outB := d.probeLane(t, "B", fmt.Sprintf("git log --all --format=LOG:%%s; git for-each-ref --format='REF:%%(refname)'; cat %s/secret.txt; git -C %s log --all --format=A-LOG:%%s; echo PROBE-DONE", wt, wt))
	t.Logf("lane B's probe printed:\n%s", outB)
	if strings.Contains(outB, "lane-a-secret") || strings.Contains(outB, "A-LOG:") || strings.Contains(outB, "gatewayd/"+files.DirName("v1:api:A")) {
		t.Error("lane B read lane A's branch, snapshots or files")
	}
	if !strings.Contains(outB, "LOG:initial") {
		t.Error("git does not work in lane B's worktree")
	}
}

// projectGitState is what of the project's .git a lane must never change:
// its config and the names and contents of its hooks.
func projectGitState(t *testing.T, repo string) string {
	t.Helper()
	var b strings.Builder
	cfg, err := os.ReadFile(filepath.Join(repo, ".git", "config"))
	if err != nil {
		t.Fatal(err)
	}
	b.Write(cfg)
	entries, _ := os.ReadDir(filepath.Join(repo, ".git", "hooks"))
	for _, e := range entries {
		body, _ := os.ReadFile(filepath.Join(repo, ".git", "hooks", e.Name()))
		fmt.Fprintf(&b, "hook %s %x;", e.Name(), sha256.Sum256(body))
	}
	return b.String()
}
