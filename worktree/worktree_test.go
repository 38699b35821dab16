package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// newRepo makes a git repository with one commit holding files (name →
// content) and returns its directory.
func newRepo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "project")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	run(t, dir, "init", "-q", "-b", "main")
	for name, content := range files {
		write(t, filepath.Join(dir, name), content)
	}
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "initial")
	return dir
}

// personEnv is who a person at a terminal commits as.
var personEnv = []string{"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@localhost", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@localhost"}

// run is git in dir as a person at a terminal runs it: it finds the
// repository from dir.
func run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), personEnv...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
	return strings.TrimSuffix(string(out), "\n")
}

func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(data)
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func laneOf(t testing.TB, project, slug string) Lane {
	return Lane{Project: project, Dir: filepath.Join(filepath.Dir(project), "worktrees", slug), Slug: slug}
}

func ensure(t testing.TB, l Lane) Ensured {
	t.Helper()
	e, err := Ensure(context.Background(), l)
	if err != nil {
		t.Fatalf("Ensure(%s): %v", l.Slug, err)
	}
	return e
}

func TestTwoLanesOnOneProjectDoNotSeeEachOther(t *testing.T) {
	project := newRepo(t, map[string]string{"README": "hello\n"})
	a := ensure(t, laneOf(t, project, "lane-a"))
	b := ensure(t, laneOf(t, project, "lane-b"))
	if a.Made != Created || b.Made != Created {
		t.Fatalf("made = %v, %v; want Created twice", a.Made, b.Made)
	}
	write(t, filepath.Join(a.Work, "notes.txt"), "from a\n")
	write(t, filepath.Join(b.Work, "notes.txt"), "from b\n")
	if got := read(t, filepath.Join(a.Work, "notes.txt")); got != "from a\n" {
		t.Errorf("lane a reads %q", got)
	}
	if got := read(t, filepath.Join(b.Work, "notes.txt")); got != "from b\n" {
		t.Errorf("lane b reads %q", got)
	}
	if exists(filepath.Join(project, "notes.txt")) {
		t.Error("the project's checkout was written")
	}
	if got := run(t, a.Dir, "branch", "--show-current"); got != "gatewayd/lane-a" {
		t.Errorf("lane a's branch = %q", got)
	}
	again := ensure(t, laneOf(t, project, "lane-a"))
	if again.Made != Existing || again.Base != a.Base {
		t.Errorf("second Ensure: made %v base %s; want Existing with base %s", again.Made, again.Base, a.Base)
	}
	if got := read(t, filepath.Join(again.Work, "notes.txt")); got != "from a\n" {
		t.Errorf("kept worktree reads %q", got)
	}
}

func TestEnsureRefusesWhatIsNotARepository(t *testing.T) {
	plain := t.TempDir()
	if _, err := Ensure(context.Background(), laneOf(t, plain, "x")); !errors.Is(err, ErrNotRepo) {
		t.Errorf("plain directory: err = %v; want ErrNotRepo", err)
	}
	empty := t.TempDir()
	run(t, empty, "init", "-q")
	if _, err := Ensure(context.Background(), laneOf(t, empty, "x")); !errors.Is(err, ErrNotRepo) {
		t.Errorf("repository without a commit: err = %v; want ErrNotRepo", err)
	}
}

func TestEnsureFromADirtyOrDetachedCheckout(t *testing.T) {
	project := newRepo(t, map[string]string{"a.txt": "one\n"})
	write(t, filepath.Join(project, "a.txt"), "uncommitted\n")
	e := ensure(t, laneOf(t, project, "dirty"))
	if !e.Dirty || e.Detached {
		t.Errorf("dirty checkout: Dirty %v Detached %v; want true false", e.Dirty, e.Detached)
	}
	if got := read(t, filepath.Join(e.Work, "a.txt")); got != "one\n" {
		t.Errorf("worktree of a dirty checkout has %q; want the committed file", got)
	}
	run(t, project, "checkout", "-q", "--", "a.txt")
	run(t, project, "checkout", "-q", "--detach")
	d := ensure(t, laneOf(t, project, "detached"))
	if d.Dirty || !d.Detached {
		t.Errorf("detached checkout: Dirty %v Detached %v; want false true", d.Dirty, d.Detached)
	}
}

// The project's repository keeps the lane's branch (it pins the objects
// the lane's repository borrows); a worktree deleted by hand is made again
// from it, wherever the operator has moved it since.
func TestAWorktreeDeletedByHandIsRecreatedFromItsBranch(t *testing.T) {
	project := newRepo(t, map[string]string{"a.txt": "one\n"})
	l := laneOf(t, project, "lane")
	e := ensure(t, l)
	run(t, project, "checkout", "-q", "-b", "side")
	write(t, filepath.Join(project, "a.txt"), "committed on the lane's branch\n")
	run(t, project, "commit", "-q", "-am", "lane work")
	run(t, project, "branch", "-f", l.Branch(), "side")
	run(t, project, "checkout", "-q", "main")
	if err := os.RemoveAll(e.Dir); err != nil {
		t.Fatal(err)
	}
	if Present(e.Tree) {
		t.Fatal("Present after the directory was removed")
	}
	again := ensure(t, l)
	if again.Made != Recreated {
		t.Errorf("made = %v; want Recreated", again.Made)
	}
	if again.Base != e.Base {
		t.Errorf("base moved from %s to %s", e.Base, again.Base)
	}
	if got := read(t, filepath.Join(again.Work, "a.txt")); got != "committed on the lane's branch\n" {
		t.Errorf("recreated worktree has %q", got)
	}
}

func TestALaneWorksInTheProjectsSubdirectory(t *testing.T) {
	repo := newRepo(t, map[string]string{"svc/main.go": "package main\n"})
	e := ensure(t, Lane{Project: filepath.Join(repo, "svc"), Dir: filepath.Join(t.TempDir(), "wt"), Slug: "sub"})
	if e.Work != filepath.Join(e.Dir, "svc") {
		t.Errorf("Work = %s; want %s", e.Work, filepath.Join(e.Dir, "svc"))
	}
	if !exists(filepath.Join(e.Work, "main.go")) {
		t.Error("the subdirectory's files are missing from the worktree")
	}
}

// makeWorktree is how a test's lane gets its worktree of project: Ensure
// as the gateway calls it without a pool, or with one (pool_test.go).
type makeWorktree func(t *testing.T, project, slug string) Ensured

func created(t *testing.T, project, slug string) Ensured { return ensure(t, laneOf(t, project, slug)) }

func TestRestoreUndoesEverythingATurnDid(t *testing.T) { checkRestore(t, created) }

func checkRestore(t *testing.T, make makeWorktree) {
	project := newRepo(t, map[string]string{"keep.txt": "keep\n", "edit.txt": "before\n", "gone.txt": "gone\n", ".gitignore": "build/\n"})
	ctx := context.Background()
	e := make(t, project, "lane")
	w := e.Work
	write(t, filepath.Join(w, "draft.txt"), "untracked before the turn\n")
	write(t, filepath.Join(w, "build", "cache"), "ignored\n")
	head := run(t, w, "rev-parse", "HEAD")

	snap, err := Snapshot(ctx, e.Tree)
	if err != nil {
		t.Fatal(err)
	}
	if err := Save(ctx, e.Tree, "turn-1", snap); err != nil {
		t.Fatal(err)
	}
	// The turn: edits, deletes, creates, and commits some of it.
	write(t, filepath.Join(w, "edit.txt"), "after\n")
	write(t, filepath.Join(w, "draft.txt"), "changed draft\n")
	write(t, filepath.Join(w, "new", "file.go"), "package x\n")
	if err := os.Remove(filepath.Join(w, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	run(t, w, "add", "-A")
	run(t, w, "commit", "-q", "-m", "the turn's commit")
	write(t, filepath.Join(w, "after-commit.txt"), "x\n")

	id, found, err := Saved(ctx, e.Tree, "turn-1")
	if err != nil || !found || id != snap {
		t.Fatalf("Saved = %s %v %v; want %s", id, found, err, snap)
	}
	if err := Restore(ctx, e.Tree, id); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"keep.txt": "keep\n", "edit.txt": "before\n", "gone.txt": "gone\n",
		"draft.txt": "untracked before the turn\n", "build/cache": "ignored\n"} {
		if got := read(t, filepath.Join(w, name)); got != want {
			t.Errorf("%s = %q; want %q", name, got, want)
		}
	}
	for _, name := range []string{"new/file.go", "after-commit.txt"} {
		if exists(filepath.Join(w, name)) {
			t.Errorf("%s, made by the turn, is still there", name)
		}
	}
	if got := run(t, w, "rev-parse", "HEAD"); got != head {
		t.Errorf("branch at %s; want %s", got, head)
	}
	if got := run(t, w, "status", "--porcelain"); got != "?? draft.txt" {
		t.Errorf("status after restore = %q; want only the untracked draft", got)
	}
	if err := Drop(ctx, e.Tree, "turn-1"); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := Saved(ctx, e.Tree, "turn-1"); found {
		t.Error("Drop left the snapshot")
	}
}

func TestDiffCountsCommittedUncommittedAndNewFiles(t *testing.T) { checkDiff(t, created) }

func checkDiff(t *testing.T, make makeWorktree) {
	project := newRepo(t, map[string]string{"a.txt": "1\n2\n3\n", "b.txt": "b\n"})
	e := make(t, project, "lane")
	write(t, filepath.Join(e.Work, "a.txt"), "1\nTWO\n3\n4\n")
	run(t, e.Work, "commit", "-q", "-am", "edit a")
	write(t, filepath.Join(e.Work, "b.txt"), "")
	write(t, filepath.Join(e.Work, "c.txt"), "new\nfile\n")
	ch, err := Diff(context.Background(), e.Tree)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][2]int{}
	for _, f := range ch.Files {
		got[f.Path] = [2]int{f.Added, f.Deleted}
	}
	want := map[string][2]int{"a.txt": {2, 1}, "b.txt": {0, 1}, "c.txt": {2, 0}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("files = %v; want %v", got, want)
	}
	if !strings.Contains(ch.Patch, "+TWO") || !strings.Contains(ch.Patch, "+new") {
		t.Errorf("patch lacks the changes:\n%s", ch.Patch)
	}
	if add, del := ch.Totals(); add != 4 || del != 2 {
		t.Errorf("totals = +%d −%d; want +4 −2", add, del)
	}
	if got := run(t, e.Work, "status", "--porcelain"); !strings.Contains(got, "?? c.txt") {
		t.Errorf("Diff staged files: status %q", got)
	}
}

func TestPruneKeepsTheNewestSnapshots(t *testing.T) {
	project := newRepo(t, map[string]string{"a.txt": "a\n"})
	ctx := context.Background()
	e := ensure(t, laneOf(t, project, "lane"))
	for i := range 5 {
		write(t, filepath.Join(e.Work, "a.txt"), fmt.Sprintf("%d\n", i))
		snap, err := Snapshot(ctx, e.Tree)
		if err != nil {
			t.Fatal(err)
		}
		// Distinct commit dates, so "newest" is not a tie.
		run(t, e.Work, "update-ref", e.turnRef(fmt.Sprint(i)), commitAt(t, e.Work, snap, int64(1700000000+i)))
	}
	dropped, err := Prune(ctx, e.Tree, 3)
	if err != nil || dropped != 2 {
		t.Fatalf("Prune = %d, %v; want 2 dropped", dropped, err)
	}
	for i := range 5 {
		_, found, _ := Saved(ctx, e.Tree, fmt.Sprint(i))
		if found != (i >= 2) {
			t.Errorf("snapshot %d kept = %v", i, found)
		}
	}
}

// commitAt copies commit id with its committer date set to unix.
func commitAt(t testing.TB, dir, id string, unix int64) string {
	tree := run(t, dir, "rev-parse", id+"^{tree}")
	parent := run(t, dir, "rev-parse", id+"^")
	cmd := exec.Command("git", "-C", dir, "commit-tree", tree, "-p", parent, "-m", "snap")
	cmd.Env = append(append(os.Environ(), personEnv...), fmt.Sprintf("GIT_COMMITTER_DATE=%d +0000", unix))
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(out))
}
