package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// snapshotFiles is what a snapshot holds: path → content.
func snapshotFiles(t *testing.T, e Ensured, id string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, p := range strings.Split(run(t, e.Work, "ls-tree", "-r", "--name-only", id), "\n") {
		if p != "" {
			out[p] = run(t, e.Work, "show", id+":"+p)
		}
	}
	return out
}

// diskFiles is what a full snapshot would hold: every file git does not
// ignore, as it is on disk.
func diskFiles(t *testing.T, e Ensured) map[string]string {
	t.Helper()
	id, err := fullSnapshot(e.Tree)
	if err != nil {
		t.Fatal(err)
	}
	return snapshotFiles(t, e, id)
}

// fullSnapshot takes a snapshot without the watch's help.
func fullSnapshot(tr Tree) (string, error) {
	ctx := context.Background()
	d := tr.dirs()
	head, err := d.git(ctx, nil, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	index := filepath.Join(tr.GitDir, "full-check.index")
	defer os.Remove(index)
	env := []string{"GIT_INDEX_FILE=" + index}
	if err := addAll(ctx, d, env); err != nil {
		return "", err
	}
	tree, err := d.git(ctx, env, "write-tree")
	if err != nil {
		return "", err
	}
	return d.git(ctx, nil, "commit-tree", tree, "-p", head, "-m", "check")
}

// The watched snapshot holds exactly what a full one would, whatever
// changed between snapshots and whoever changed it: files edited, made in
// new directories, removed, renamed, directories moved, ignored files,
// a .gitignore that uncovers files, a nested repository; and when nothing
// changed it runs one git (to read HEAD) instead of looking at every file.
func TestWatchedSnapshotsMissNothing(t *testing.T) {
	ctx := context.Background()
	project := newRepo(t, map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n", ".gitignore": "build/\n*.log\n"})
	e := ensure(t, laneOf(t, project, "lane"))
	steps := []struct {
		name   string
		change func()
	}{
		{"nothing", func() {}},
		{"edit", func() { write(t, filepath.Join(e.Work, "a.txt"), "edited\n") }},
		{"new directory tree", func() { write(t, filepath.Join(e.Work, "new", "deep", "c.txt"), "c\n") }},
		{"remove", func() { must(t, os.Remove(filepath.Join(e.Work, "dir", "b.txt"))) }},
		{"rename", func() { must(t, os.Rename(filepath.Join(e.Work, "a.txt"), filepath.Join(e.Work, "renamed.txt"))) }},
		{"move a directory", func() { must(t, os.Rename(filepath.Join(e.Work, "new"), filepath.Join(e.Work, "moved"))) }},
		{"edit in the moved directory", func() { write(t, filepath.Join(e.Work, "moved", "deep", "c.txt"), "c2\n") }},
		{"ignored", func() {
			write(t, filepath.Join(e.Work, "build", "out.o"), "o\n")
			write(t, filepath.Join(e.Work, "x.log"), "l\n")
		}},
		{"uncover", func() { write(t, filepath.Join(e.Work, ".gitignore"), "*.log\n") }},
		{"chmod", func() { must(t, os.Chmod(filepath.Join(e.Work, "renamed.txt"), 0o755)) }},
		{"made and removed", func() {
			write(t, filepath.Join(e.Work, ".codex", "tmp"), "t\n")
			must(t, os.RemoveAll(filepath.Join(e.Work, ".codex")))
			write(t, filepath.Join(e.Work, "gone.txt"), "g\n")
			must(t, os.Remove(filepath.Join(e.Work, "gone.txt")))
		}},
		{"nested repository", func() {
			run(t, t.TempDir(), "init", "-q", filepath.Join(e.Work, "sub"))
			write(t, filepath.Join(e.Work, "sub", "f"), "f\n")
		}},
	}
	for i, step := range steps {
		step.change()
		before := gitRuns.Load()
		id, err := Snapshot(ctx, e.Tree)
		if err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		runs := gitRuns.Load() - before
		if got, want := snapshotFiles(t, e, id), diskFiles(t, e); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: snapshot holds\n%v\nwant\n%v", step.name, got, want)
		}
		if step.name == "nothing" && i > 0 && runs != 1 {
			t.Errorf("an unchanged worktree ran %d gits", runs)
		}
	}
	// Nothing changed since the last step: one git, the same snapshot.
	first, _ := Snapshot(ctx, e.Tree)
	before := gitRuns.Load()
	again, err := Snapshot(ctx, e.Tree)
	if err != nil || again != first || gitRuns.Load()-before != 1 {
		t.Errorf("unchanged: %s then %s, %d gits, %v; want the same snapshot from one git", first, again, gitRuns.Load()-before, err)
	}
}

// /undo after turns that changed 0, 1 and 1,000 files puts the worktree
// back exactly as it was before each, with watched snapshots.
func TestUndoAfterTurnsOfEverySize(t *testing.T) {
	ctx := context.Background()
	files := map[string]string{}
	for i := range 200 {
		files[fmt.Sprintf("d%d/f%d.txt", i%10, i)] = fmt.Sprint(i)
	}
	project := newRepo(t, files)
	e := ensure(t, laneOf(t, project, "lane"))
	for _, n := range []int{0, 1, 1000} {
		before := diskFiles(t, e)
		snap, err := Snapshot(ctx, e.Tree)
		if err != nil {
			t.Fatal(err)
		}
		for i := range n {
			write(t, filepath.Join(e.Work, fmt.Sprintf("d%d", i%10), fmt.Sprintf("f%d.txt", i)), fmt.Sprintf("turn %d\n", n))
		}
		if err := Restore(ctx, e.Tree, snap); err != nil {
			t.Fatal(err)
		}
		if after := diskFiles(t, e); fmt.Sprint(after) != fmt.Sprint(before) {
			t.Errorf("after /undo of a turn that changed %d files the worktree differs", n)
		}
	}
}

// A file the operator changes between turns is in the next snapshot, even
// when no turn ran since the last one.
func TestAnOperatorsChangeIsInTheNextSnapshot(t *testing.T) {
	ctx := context.Background()
	project := newRepo(t, map[string]string{"a.txt": "a\n"})
	e := ensure(t, laneOf(t, project, "lane"))
	if _, err := Snapshot(ctx, e.Tree); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(e.Work, "a.txt"), "the operator's edit\n")
	id, err := Snapshot(ctx, e.Tree)
	if err != nil {
		t.Fatal(err)
	}
	if got := run(t, e.Work, "show", id+":a.txt"); got != "the operator's edit" {
		t.Errorf("snapshot has %q", got)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
