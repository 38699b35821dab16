package gateway_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/feature/projects"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/worktree"
)

// writeMarker makes fileWritingModel write the rest of the user's text to
// notes.txt with a shell command, then answer.
const writeMarker = "WRITE:"

// fileWritingModel answers "WRITE:<text>" with an exec_command call that
// writes <text> to notes.txt in the thread's working directory, and
// everything else (the call's follow-up included) as DefaultReply does.
func fileWritingModel(req codextest.Request) codextest.Reply {
	text := req.LastUserText()
	if _, followUp := req.ToolOutput(); !followUp && strings.Contains(text, writeMarker) {
		content := strings.TrimSpace(text[strings.Index(text, writeMarker)+len(writeMarker):])
		return codextest.Reply{ToolCall: codextest.ExecCommand("call_write", fmt.Sprintf("printf '%%s\\n' %q > notes.txt", content))}
	}
	return codextest.DefaultReply(req)
}

// gitRepo makes a repository with one commit and returns its directory.
func gitRepo(t testing.TB) string { return gatewaytest.GitRepo(t) }

// worktreeOf is where the gateway puts the API lane's worktree of project.
func worktreeOf(root, lane, project string) string {
	return filepath.Join(root, files.DirName("v1:api:"+lane), files.DirName(project))
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(data)
}

// TestIntegrationLanesOnOneProjectWorkInTheirOwnWorktrees: with the real
// app-server, two lanes on one git project each write notes.txt through a
// command Codex runs; each finds its own in its own worktree (the model's
// cwd), the checkout is untouched, /diff lists the change, and after a
// restart the lane works in the same worktree.
func TestIntegrationLanesOnOneProjectWorkInTheirOwnWorktrees(t *testing.T) {
	w := newWorld(t)
	w.model.Respond(fileWritingModel)
	repo, root := gitRepo(t), t.TempDir()
	w.features.Projects = projects.Settings{Projects: map[string]string{"app": repo}}
	cfg := gateway.Config{Worktrees: root}
	gw := w.start(t, cfg)
	// The checkout has an uncommitted change: the worktrees start from its
	// last commit without it, and each lane is told so once.
	if err := os.WriteFile(filepath.Join(repo, "README"), []byte("edited in the checkout\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, lane := range []string{"alpha", "beta"} {
		gw.ask(t, lane, "/project app")
		r := gw.ask(t, lane, "please "+writeMarker+" from "+lane)
		if !strings.Contains(strings.Join(r.Notices, "\n"), "The checkout has uncommitted changes; they are not in this worktree.") {
			t.Errorf("%s was not told the checkout's changes stay out: %q", lane, r.Notices)
		}
		if got := readFile(t, filepath.Join(worktreeOf(root, lane, "app"), "README")); got != "project\n" {
			t.Errorf("%s's worktree README = %q, want the committed one", lane, got)
		}
		dir := worktreeOf(root, lane, "app")
		if got := w.lastCwd(t, r.ThreadID); got != dir {
			t.Fatalf("%s's request cwd = %q; want its worktree %s", lane, got, dir)
		}
	}
	for _, lane := range []string{"alpha", "beta"} {
		if got := readFile(t, filepath.Join(worktreeOf(root, lane, "app"), "notes.txt")); got != "from "+lane+"\n" {
			t.Errorf("%s's worktree has notes.txt %q", lane, got)
		}
	}
	if _, err := os.Stat(filepath.Join(repo, "notes.txt")); err == nil {
		t.Error("a lane wrote into the project's checkout")
	}

	d := gw.ask(t, "alpha", "/diff")
	if !strings.Contains(d.Reply, "1 file, +1 −0") || !strings.Contains(d.Reply, "• notes.txt +1 −0") || !strings.Contains(d.Reply, "+from alpha") {
		t.Errorf("/diff answered %q", d.Reply)
	}
	if st := gw.ask(t, "alpha", "/status"); !strings.Contains(st.Reply, "Worktree: "+worktreeOf(root, "alpha", "app")+" on branch gatewayd/") {
		t.Errorf("/status lacks the worktree: %q", st.Reply)
	}

	gw.stop()
	gw = w.start(t, cfg)
	r := gw.ask(t, "beta", "still there?")
	if got := w.lastCwd(t, r.ThreadID); got != worktreeOf(root, "beta", "app") {
		t.Errorf("after a restart beta's cwd = %q", got)
	}
}

// TestIntegrationWorktreeDeletedByHandIsMadeAgain: a lane whose worktree
// was removed gets it back from its branch at the next turn, and is told.
func TestIntegrationWorktreeDeletedByHandIsMadeAgain(t *testing.T) {
	w := newWorld(t)
	repo, root := gitRepo(t), t.TempDir()
	w.features.Projects = projects.Settings{Projects: map[string]string{"app": repo}}
	cfg := gateway.Config{Worktrees: root}
	gw := w.start(t, cfg)
	gw.ask(t, "alpha", "/project app")
	gw.ask(t, "alpha", "hello")
	dir := worktreeOf(root, "alpha", "app")
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	r := gw.ask(t, "alpha", "again")
	if !strings.Contains(strings.Join(r.Notices, "\n"), "was missing; made it again from branch gatewayd/") {
		t.Errorf("the lane was not told: notices %q", r.Notices)
	}
	if _, err := os.Stat(filepath.Join(dir, "README")); err != nil {
		t.Errorf("worktree not made again: %v", err)
	}
}

// TestIntegrationDiffWithoutAGitProject: /diff on a lane without a
// project, and on a project that is not a git repository, says why there
// is nothing to show.
func TestIntegrationDiffWithoutAGitProject(t *testing.T) {
	w := newWorld(t)
	plain := t.TempDir()
	w.features.Projects = projects.Settings{Projects: map[string]string{"plain": plain}}
	gw := w.start(t, gateway.Config{Worktrees: t.TempDir()})
	if r := gw.ask(t, "alpha", "/diff"); !strings.Contains(r.Reply, "no project") {
		t.Errorf("/diff without a project answered %q", r.Reply)
	}
	gw.ask(t, "alpha", "/project plain")
	if r := gw.ask(t, "alpha", "/diff"); !strings.Contains(r.Reply, "not a git repository") {
		t.Errorf("/diff on a plain directory answered %q", r.Reply)
	}
	r := gw.ask(t, "alpha", "works anyway")
	if got := w.lastCwd(t, r.ThreadID); got != plain {
		t.Errorf("a lane on a plain directory works in %q; want %s", got, plain)
	}
}

// TestIntegrationFirstMessageTakesAWorktreeFromThePool: with the real
// app-server, a lane that picks a git project gets a worktree taken ready
// from the pool (worktrees.pool) rather than checked out, its first
// message is answered working in it, and /fork takes the next one.
func TestIntegrationFirstMessageTakesAWorktreeFromThePool(t *testing.T) {
	w := newWorld(t)
	w.model.Respond(fileWritingModel)
	repo, root := gitRepo(t), t.TempDir()
	pool := worktree.NewPool(root, 1)
	fillPool(t, pool, repo)
	w.features.Projects = projects.Settings{Projects: map[string]string{"app": repo}, Pool: pool}
	gw := w.start(t, gateway.Config{Worktrees: root})

	gw.ask(t, "alpha", "/project app")
	r := gw.ask(t, "alpha", "please "+writeMarker+" from the pool")
	dir := worktreeOf(root, "alpha", "app")
	if got := w.lastCwd(t, r.ThreadID); got != dir {
		t.Fatalf("the request's cwd = %q; want the lane's worktree %s", got, dir)
	}
	if got := readFile(t, filepath.Join(dir, "notes.txt")); got != "from the pool\n" {
		t.Errorf("the worktree's notes.txt = %q", got)
	}
	made := gw.logs.FilterMessage("worktree.made").FilterField(zap.String("lane", "v1:api:alpha")).All()
	if len(made) != 1 || made[0].ContextMap()["pooled"] != true {
		t.Errorf("worktree.made for alpha = %+v; want one, pooled", made)
	}
	if n := pool.Count(files.DirName("app")); n != 0 {
		t.Errorf("the pool still holds %d worktrees; the lane's should have come from it", n)
	}

	fillPool(t, pool, repo)
	f := gw.ask(t, "alpha", "/fork experiment")
	if f.Fork == nil {
		t.Fatalf("/fork answered %q", f.Reply)
	}
	child := worktreeOf(root, strings.TrimPrefix(f.Fork.Lane, "v1:api:"), "app")
	if got := readFile(t, filepath.Join(child, "notes.txt")); got != "from the pool\n" {
		t.Errorf("the fork's notes.txt = %q, want the parent's", got)
	}
	if n := pool.Count(files.DirName("app")); n != 0 {
		t.Errorf("the pool still holds %d worktrees after /fork; the fork's should have come from it", n)
	}
}

// fillPool fills pool with the project "app" at repo, as the daemon's
// background fill does.
func fillPool(t *testing.T, pool *worktree.Pool, repo string) {
	t.Helper()
	if err := pool.Fill(context.Background(), repo, files.DirName("app")); err != nil {
		t.Fatalf("filling the pool: %v", err)
	}
	if n := pool.Count(files.DirName("app")); n != 1 {
		t.Fatalf("the pool holds %d worktrees after Fill; want 1", n)
	}
}
