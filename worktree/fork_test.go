package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestForkStartsFromTheParentsFilesAndLeavesThemAlone: the fork has the
// parent's committed and uncommitted changes (a new file and a deleted one
// too), on its own branch at the parent's head, with the parent's base;
// what the fork writes next does not reach the parent, and a second fork
// into the same lane is refused.
func TestForkStartsFromTheParentsFilesAndLeavesThemAlone(t *testing.T) {
	checkFork(t, laneOf, func(string) *Pool { return nil })
}

// checkFork forks lanes placed by laneAt with the pool newPool gives for
// the project (nil: none); a pool's entry must be the one the fork took.
func checkFork(t *testing.T, laneAt func(testing.TB, string, string) Lane, newPool func(project string) *Pool) {
	ctx := context.Background()
	project := newRepo(t, map[string]string{"a.txt": "a\n", "d/gone.txt": "the parent deletes it\n"})
	parent := ensure(t, laneAt(t, project, "parent"))
	write(t, filepath.Join(parent.Work, "a.txt"), "a committed\n")
	run(t, parent.Work, "commit", "-q", "-am", "parent's commit")
	write(t, filepath.Join(parent.Work, "a.txt"), "a uncommitted\n")
	write(t, filepath.Join(parent.Work, "new.txt"), "new\n")
	if err := os.Remove(filepath.Join(parent.Work, "d", "gone.txt")); err != nil {
		t.Fatal(err)
	}
	parentStatus := run(t, parent.Work, "status", "--porcelain")
	p := newPool(project)
	if p != nil {
		fill(t, p, project)
	}

	child, err := p.Fork(ctx, parent.Tree, laneAt(t, project, "child"))
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	if p != nil && p.Count(filepath.Base(child.Dir)) != 0 {
		t.Error("the fork did not take the pool's worktree")
	}
	if got := read(t, filepath.Join(child.Work, "a.txt")); got != "a uncommitted\n" {
		t.Errorf("the fork's a.txt = %q", got)
	}
	if got := read(t, filepath.Join(child.Work, "new.txt")); got != "new\n" {
		t.Errorf("the fork's new.txt = %q", got)
	}
	if exists(filepath.Join(child.Work, "d", "gone.txt")) {
		t.Error("the fork has the file the parent deleted")
	}
	if got := run(t, child.Work, "branch", "--show-current"); got != "gatewayd/child" {
		t.Errorf("the fork's branch = %q", got)
	}
	if got, want := run(t, child.Work, "rev-parse", "HEAD"), run(t, parent.Work, "rev-parse", "HEAD"); got != want {
		t.Errorf("the fork's HEAD %s, want the parent's %s", got, want)
	}
	if child.Base != parent.Base {
		t.Errorf("the fork's base %s, want the parent's %s", child.Base, parent.Base)
	}
	if got := run(t, project, "rev-parse", "refs/heads/gatewayd/child"); got != parent.Base {
		t.Errorf("the project pins the fork at %s, want the parent's base %s", got, parent.Base)
	}
	if got := run(t, child.Work, "status", "--porcelain"); got != parentStatus {
		t.Errorf("the fork's status %q, want the parent's %q", got, parentStatus)
	}
	ch, err := Diff(ctx, child)
	if err != nil || len(ch.Files) != 3 {
		t.Errorf("the fork's diff = %+v, %v; want a.txt, d/gone.txt and new.txt since the parent's base", ch.Files, err)
	}

	write(t, filepath.Join(child.Work, "a.txt"), "child's\n")
	if got := read(t, filepath.Join(parent.Work, "a.txt")); got != "a uncommitted\n" {
		t.Errorf("the parent's a.txt became %q", got)
	}
	if got := run(t, parent.Work, "status", "--porcelain"); got != parentStatus {
		t.Errorf("forking changed the parent's status to %q", got)
	}
	if _, err := p.Fork(ctx, parent.Tree, laneAt(t, project, "child")); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second fork into the same lane: %v", err)
	}
}
