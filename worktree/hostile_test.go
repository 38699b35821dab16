package worktree

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// /diff runs beside the snapshot a turn takes as it starts: neither may
// see the other's half-written index, and every snapshot holds the files.
func TestSnapshotAndDiffAtOnceBothSeeTheFiles(t *testing.T) {
	ctx := context.Background()
	project := newRepo(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"})
	e := ensure(t, laneOf(t, project, "lane"))
	write(t, filepath.Join(e.Work, "new.txt"), "new\n")
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	snaps := make(chan string, 10)
	for range 10 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			id, err := Snapshot(ctx, e.Tree)
			errs <- err
			snaps <- id
		}()
		go func() {
			defer wg.Done()
			_, err := Diff(ctx, e.Tree)
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	close(snaps)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	for id := range snaps {
		if files := run(t, e.Work, "ls-tree", "--name-only", id); files != "a.txt\nb.txt\nnew.txt" {
			t.Errorf("snapshot %s holds %q", id, files)
		}
	}
}

// A FIFO where git reads (.gitignore) would keep git waiting forever: the
// daemon's git gives up at its deadline, so the lane's queue goes on.
func TestAGitThatWaitsForeverIsStopped(t *testing.T) {
	old := gitTimeout
	gitTimeout = 2 * time.Second
	t.Cleanup(func() { gitTimeout = old })
	project := newRepo(t, map[string]string{"a.txt": "a\n"})
	e := ensure(t, laneOf(t, project, "lane"))
	if err := syscall.Mkfifo(filepath.Join(e.Work, ".gitignore"), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err := Snapshot(context.Background(), e.Tree)
	if err == nil || !strings.Contains(err.Error(), "did not finish") {
		t.Fatalf("Snapshot = %v; want a timeout", err)
	}
	if waited := time.Since(start); waited > time.Minute {
		t.Errorf("waited %s", waited)
	}
}

// A converted worktree's snapshots survive the project's `git gc`: their
// objects were copied into the lane's repository before the project's
// refs to them went.
func TestConvertedSnapshotsSurviveTheProjectsGC(t *testing.T) {
	ctx := context.Background()
	project := newRepo(t, map[string]string{"a.txt": "a\n"})
	l := laneOf(t, project, "lane")
	run(t, project, "worktree", "add", "-q", "-b", l.Branch(), l.Dir, "HEAD")
	write(t, filepath.Join(l.Dir, "a.txt"), "only in the snapshot\n")
	run(t, l.Dir, "add", "-A")
	snap := run(t, l.Dir, "commit-tree", run(t, l.Dir, "write-tree"), "-p", "HEAD", "-m", "snap")
	run(t, project, "update-ref", l.turnRef("t1"), snap)
	e := ensure(t, l)
	run(t, project, "reflog", "expire", "--expire=now", "--all")
	run(t, project, "gc", "-q", "--prune=now")
	if err := Restore(ctx, e.Tree, snap); err != nil {
		t.Fatalf("Restore after the project's gc: %v", err)
	}
	if got := read(t, filepath.Join(e.Work, "a.txt")); got != "only in the snapshot\n" {
		t.Errorf("a.txt = %q", got)
	}
}

// /undo takes back a file the turn hid behind a .gitignore it wrote, and a
// repository the turn made inside the worktree.
func TestRestoreTakesBackWhatTheTurnHid(t *testing.T) {
	ctx := context.Background()
	project := newRepo(t, map[string]string{"a.txt": "a\n"})
	e := ensure(t, laneOf(t, project, "lane"))
	snap, err := Snapshot(ctx, e.Tree)
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(e.Work, ".gitignore"), "hidden.txt\n")
	write(t, filepath.Join(e.Work, "hidden.txt"), "x\n")
	run(t, t.TempDir(), "init", "-q", filepath.Join(e.Work, "nested"))
	write(t, filepath.Join(e.Work, "nested", "f"), "n\n")
	if err := Restore(ctx, e.Tree, snap); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{".gitignore", "hidden.txt", "nested"} {
		if exists(filepath.Join(e.Work, name)) {
			t.Errorf("%s, made by the undone turn, is still there", name)
		}
	}
}

// A project whose repository uses sha256 objects gets sha256 lanes.
func TestASHA256Project(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "project")
	run(t, t.TempDir(), "init", "-q", "--object-format=sha256", "-b", "main", dir)
	write(t, filepath.Join(dir, "a.txt"), "a\n")
	run(t, dir, "add", "-A")
	run(t, dir, "commit", "-q", "-m", "initial")
	e := ensure(t, laneOf(t, dir, "lane"))
	write(t, filepath.Join(e.Work, "a.txt"), "changed\n")
	snap, err := Snapshot(ctx, e.Tree)
	if err != nil || len(snap) != 64 {
		t.Fatalf("Snapshot = %q, %v; want a sha256 id", snap, err)
	}
	if err := Restore(ctx, e.Tree, snap); err != nil {
		t.Fatal(err)
	}
}

// A project that is a linked worktree of another checkout: the lane
// starts from that worktree's HEAD, not the main checkout's.
func TestAProjectThatIsALinkedWorktree(t *testing.T) {
	main := newRepo(t, map[string]string{"a.txt": "main\n"})
	feature := filepath.Join(t.TempDir(), "feature")
	run(t, main, "worktree", "add", "-q", "-b", "feature", feature)
	write(t, filepath.Join(feature, "a.txt"), "feature\n")
	run(t, feature, "commit", "-q", "-am", "feature work")
	e := ensure(t, laneOf(t, feature, "lane"))
	if got := read(t, filepath.Join(e.Work, "a.txt")); got != "feature\n" {
		t.Errorf("the lane started from %q; want the feature worktree's HEAD", got)
	}
}

// A filter an older gatewayd let a lane plant in the project's own config
// (and attributes) does not run when the daemon reads the checkout's
// state to make a worktree.
func TestAFilterPlantedInTheProjectDoesNotRun(t *testing.T) {
	project := newRepo(t, map[string]string{"a.txt": "a\n"})
	marker := filepath.Join(t.TempDir(), "ran")
	run(t, project, "config", "filter.evil.clean", "touch "+marker+"; cat")
	write(t, filepath.Join(project, ".git", "info", "attributes"), "* filter=evil\n")
	write(t, filepath.Join(project, "a.txt"), "changed in the checkout\n")
	e := ensure(t, laneOf(t, project, "lane"))
	if !e.Dirty {
		t.Error("the checkout's change was not seen")
	}
	if exists(marker) {
		t.Error("the daemon's git ran the project's planted filter")
	}
}

// A project owned by another user is still a repository to the daemon
// (the operator configured it), and its lanes get worktrees, not the
// checkout itself.
func TestAProjectOwnedByAnotherUser(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the project to another user")
	}
	project := newRepo(t, map[string]string{"a.txt": "a\n"})
	err := filepath.Walk(project, func(p string, _ os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, 65534, 65534)
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(context.Background(), laneOf(t, project, "lane")); err != nil {
		t.Fatalf("Ensure: %v", err)
	}
}
