package worktree

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestForkStartsFromTheParentsFilesAndLeavesThemAlone: the fork has the
// parent's committed and uncommitted changes (a new file too), on its own
// branch at the parent's head, with the parent's base; what the fork
// writes next does not reach the parent, and a second fork into the same
// lane is refused.
func TestForkStartsFromTheParentsFilesAndLeavesThemAlone(t *testing.T) {
	ctx := context.Background()
	project := newRepo(t, map[string]string{"a.txt": "a\n"})
	parent := ensure(t, laneOf(t, project, "parent"))
	write(t, filepath.Join(parent.Work, "a.txt"), "a committed\n")
	run(t, parent.Work, "commit", "-q", "-am", "parent's commit")
	write(t, filepath.Join(parent.Work, "a.txt"), "a uncommitted\n")
	write(t, filepath.Join(parent.Work, "new.txt"), "new\n")
	parentStatus := run(t, parent.Work, "status", "--porcelain")

	child, err := Fork(ctx, parent.Tree, laneOf(t, project, "child"))
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	if got := read(t, filepath.Join(child.Work, "a.txt")); got != "a uncommitted\n" {
		t.Errorf("the fork's a.txt = %q", got)
	}
	if got := read(t, filepath.Join(child.Work, "new.txt")); got != "new\n" {
		t.Errorf("the fork's new.txt = %q", got)
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
	if got := run(t, child.Work, "status", "--porcelain"); got != parentStatus {
		t.Errorf("the fork's status %q, want the parent's %q", got, parentStatus)
	}
	ch, err := Diff(ctx, child)
	if err != nil || len(ch.Files) != 2 {
		t.Errorf("the fork's diff = %+v, %v; want a.txt and new.txt since the parent's base", ch.Files, err)
	}

	write(t, filepath.Join(child.Work, "a.txt"), "child's\n")
	if got := read(t, filepath.Join(parent.Work, "a.txt")); got != "a uncommitted\n" {
		t.Errorf("the parent's a.txt became %q", got)
	}
	if got := run(t, parent.Work, "status", "--porcelain"); got != parentStatus {
		t.Errorf("forking changed the parent's status to %q", got)
	}
	if _, err := Fork(ctx, parent.Tree, laneOf(t, project, "child")); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second fork into the same lane: %v", err)
	}
}
