package worktree

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// plantEverything writes into the lane's repository and worktree what a
// hostile lane would, had its commands been able to write its .git: a
// config whose fsmonitor, filter and include run markerDir/<name>, hooks
// for every step the daemon's git takes, a commondir pointing at a
// repository with the same config, and a nested repository of its own
// with an fsmonitor. It returns the markers that must never appear.
func plantEverything(t *testing.T, tree Tree, markerDir string) []string {
	t.Helper()
	touch := func(name string) string { return "touch " + filepath.Join(markerDir, name) + "; false" }
	evil := "[core]\n\tfsmonitor = \"" + touch("fsmonitor") + "\"\n\thooksPath = hooks\n" +
		"[filter \"evil\"]\n\tclean = \"" + touch("filter-clean") + "\"\n\tsmudge = \"" + touch("filter-smudge") + "\"\n" +
		"[include]\n\tpath = " + filepath.Join(markerDir, "include.cfg") + "\n"
	write(t, filepath.Join(markerDir, "include.cfg"), "[diff]\n\texternal = \""+touch("included")+"\"\n")
	write(t, filepath.Join(tree.GitDir, "config"), laneConfig+evil)
	other := filepath.Join(markerDir, "other.git")
	write(t, filepath.Join(other, "config"), laneConfig+strings.ReplaceAll(evil, "fsmonitor\"", "commondir-fsmonitor\""))
	write(t, filepath.Join(tree.GitDir, "commondir"), other+"\n")
	hooks := []string{"post-checkout", "reference-transaction", "post-commit", "pre-commit", "post-index-change", "pre-auto-gc", "fsmonitor-watchman"}
	for _, h := range hooks {
		write(t, filepath.Join(tree.GitDir, "hooks", h), "#!/bin/sh\ntouch "+filepath.Join(markerDir, "hook-"+h)+"\n")
		if err := os.Chmod(filepath.Join(tree.GitDir, "hooks", h), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	write(t, filepath.Join(tree.Work, ".gitattributes"), "* filter=evil diff=evil\n")
	nested := filepath.Join(tree.Work, "sub")
	run(t, t.TempDir(), "init", "-q", nested)
	write(t, filepath.Join(nested, "f.txt"), "nested\n")
	run(t, nested, "add", "-A")
	run(t, nested, "commit", "-q", "-m", "nested")
	run(t, nested, "config", "core.fsmonitor", touch("nested-fsmonitor"))
	markers := []string{"fsmonitor", "filter-clean", "filter-smudge", "included", "commondir-fsmonitor", "nested-fsmonitor"}
	for _, h := range hooks {
		markers = append(markers, "hook-"+h)
	}
	return markers
}

// Whatever a lane manages to write into its repository, no git the daemon
// runs on it — snapshot, save, diff, restore, prune, fork, ensure —
// executes any of it: hooks, fsmonitor, filters, includes and another
// repository's config named by commondir are put back or never read, and
// a nested repository's config is not consulted. The config is the
// daemon's again afterwards.
func TestTheDaemonsGitRunsNothingALanePlanted(t *testing.T) {
	ctx := context.Background()
	project := newRepo(t, map[string]string{"a.txt": "a\n"})
	e := ensure(t, laneOf(t, project, "lane"))
	markerDir := t.TempDir()
	markers := plantEverything(t, e.Tree, markerDir)
	write(t, filepath.Join(e.Work, "a.txt"), "changed\n")

	snap, err := Snapshot(ctx, e.Tree)
	if err != nil {
		t.Fatal(err)
	}
	steps := map[string]func() error{
		"save":  func() error { return Save(ctx, e.Tree, "t1", snap) },
		"diff":  func() error { _, err := Diff(ctx, e.Tree); return err },
		"prune": func() error { _, err := Prune(ctx, e.Tree, 1); return err },
		"fork": func() error {
			_, err := Fork(ctx, e.Tree, laneOf(t, project, "child"))
			return err
		},
		"restore": func() error { return Restore(ctx, e.Tree, snap) },
		"ensure":  func() error { _, err := Ensure(ctx, laneOf(t, project, "lane")); return err },
	}
	for _, name := range []string{"save", "diff", "prune", "fork", "restore", "ensure"} {
		// Plant again before each step: each must protect itself.
		plantAgain(t, e.Tree, markerDir)
		if err := steps[name](); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, m := range markers {
		if _, err := os.Stat(filepath.Join(markerDir, m)); err == nil {
			t.Errorf("the daemon's git ran what the lane planted: %s", m)
		}
	}
	if got := read(t, filepath.Join(e.GitDir, "config")); got != laneConfig {
		t.Errorf("the lane's config was not put back:\n%s", got)
	}
	if _, err := os.Lstat(filepath.Join(e.GitDir, "commondir")); err == nil {
		t.Error("commondir is still there")
	}
}

// plantAgain rewrites the lane's config and commondir as plantEverything
// left them (guard put them back at the previous step).
func plantAgain(t *testing.T, tree Tree, markerDir string) {
	t.Helper()
	touch := "touch " + filepath.Join(markerDir, "fsmonitor") + "; false"
	write(t, filepath.Join(tree.GitDir, "config"), laneConfig+"[core]\n\tfsmonitor = \""+touch+"\"\n\thooksPath = hooks\n")
	write(t, filepath.Join(tree.GitDir, "commondir"), filepath.Join(markerDir, "other.git")+"\n")
}

// Repair replaces a config that is a symlink (to a file the lane wants the
// daemon to overwrite, or to read as config) by a file, without writing
// through the link, and says what it put back.
func TestRepairDoesNotFollowALink(t *testing.T) {
	project := newRepo(t, map[string]string{"a.txt": "a\n"})
	e := ensure(t, laneOf(t, project, "lane"))
	victim := filepath.Join(t.TempDir(), "victim")
	write(t, victim, "operator's file\n")
	cfg := filepath.Join(e.GitDir, "config")
	if err := os.Remove(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(victim, cfg); err != nil {
		t.Fatal(err)
	}
	changed, err := Repair(e.Tree)
	if err != nil || !slices.Contains(changed, "config") {
		t.Fatalf("Repair = %v, %v; want config put back", changed, err)
	}
	if got := read(t, victim); got != "operator's file\n" {
		t.Errorf("Repair wrote through the link: %q", got)
	}
	if fi, err := os.Lstat(cfg); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("config is not a regular file again: %v, %v", fi, err)
	}
	if changed, _ := Repair(e.Tree); len(changed) != 0 {
		t.Errorf("a second Repair changed %v", changed)
	}
}

// The daemon's git gets none of the daemon's environment: no token, no
// GATEWAYD_* variable, no GIT_* the daemon was started with (GIT_DIR
// would move it to another repository), no global or system config.
func TestTheDaemonsGitGetsAScrubbedEnvironment(t *testing.T) {
	t.Setenv("GATEWAYD_TELEGRAM_TOKEN", "SECRET-TOKEN")
	t.Setenv("OPENAI_API_KEY", "SECRET-KEY")
	t.Setenv("GIT_DIR", "/elsewhere")
	t.Setenv("GIT_CONFIG_PARAMETERS", "'core.fsmonitor'='touch /tmp/x'")
	cmd := repoDirs{gitDir: "/g", workTree: "/w"}.command(context.Background(), nil, "status")
	for _, kv := range cmd.Env {
		if strings.Contains(kv, "SECRET") || strings.HasPrefix(kv, "GIT_DIR=") || strings.HasPrefix(kv, "GIT_CONFIG_PARAMETERS=") {
			t.Errorf("the daemon's git gets %s", kv)
		}
	}
	for _, want := range []string{"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull} {
		if !slices.Contains(cmd.Env, want) {
			t.Errorf("env lacks %s: %v", want, cmd.Env)
		}
	}
	if !slices.Contains(cmd.Args, "--git-dir=/g") || !slices.Contains(cmd.Args, "--work-tree=/w") || !slices.Contains(cmd.Args, "core.hooksPath="+os.DevNull) {
		t.Errorf("args = %v", cmd.Args)
	}
}

// The project's repository is never handed to a lane: making, using and
// forking lanes' worktrees leaves its config, hooks and worktree records
// as they were, and a lane's repository holds no other lane's refs.
func TestLanesLeaveTheProjectsGitDirectoryAlone(t *testing.T) {
	ctx := context.Background()
	project := newRepo(t, map[string]string{"a.txt": "a\n"})
	before := gitDirState(t, project)
	a := ensure(t, laneOf(t, project, "lane-a"))
	b := ensure(t, laneOf(t, project, "lane-b"))
	write(t, filepath.Join(a.Work, "a.txt"), "lane a's secret\n")
	snap, err := Snapshot(ctx, a.Tree)
	if err != nil {
		t.Fatal(err)
	}
	if err := Save(ctx, a.Tree, "t1", snap); err != nil {
		t.Fatal(err)
	}
	if after := gitDirState(t, project); after != before {
		t.Errorf("the project's .git changed:\nbefore %s\nafter  %s", before, after)
	}
	if refs := run(t, b.Work, "for-each-ref", "--format=%(refname)"); strings.Contains(refs, "lane-a") {
		t.Errorf("lane b's repository names lane a's refs:\n%s", refs)
	}
	if out, err := exec.Command("git", "-C", b.Work, "cat-file", "-p", snap).CombinedOutput(); err == nil {
		t.Errorf("lane b's repository reads lane a's snapshot:\n%s", out)
	}
	if list := run(t, project, "worktree", "list", "--porcelain"); strings.Count(list, "worktree ") != 1 {
		t.Errorf("the project records linked worktrees:\n%s", list)
	}
}

// gitDirState is what of a repository's .git a lane must never change:
// its config and the names of its hooks and worktree records.
func gitDirState(t *testing.T, project string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(read(t, filepath.Join(project, ".git", "config")))
	for _, dir := range []string{"hooks", "worktrees"} {
		entries, _ := os.ReadDir(filepath.Join(project, ".git", dir))
		for _, e := range entries {
			b.WriteString(dir + "/" + e.Name() + ";")
		}
	}
	return b.String()
}

// A linked worktree an older gatewayd made (its .git a file into the
// project's repository) becomes a repository of the lane's own in place:
// its files and uncommitted changes stay, its snapshots move with it, and
// the project's repository forgets the worktree and the snapshot refs.
func TestALinkedWorktreeIsConverted(t *testing.T) {
	ctx := context.Background()
	project := newRepo(t, map[string]string{"a.txt": "a\n"})
	l := laneOf(t, project, "lane")
	run(t, project, "worktree", "add", "-q", "-b", l.Branch(), l.Dir, "HEAD")
	base := run(t, project, "rev-parse", "HEAD")
	run(t, project, "update-ref", l.baseRef(), base)
	write(t, filepath.Join(l.Dir, "a.txt"), "before the turn\n")
	run(t, l.Dir, "add", "-A")
	tree := run(t, l.Dir, "write-tree")
	snap := run(t, l.Dir, "commit-tree", tree, "-p", base, "-m", "snap")
	run(t, project, "update-ref", l.turnRef("t1"), snap)
	write(t, filepath.Join(l.Dir, "a.txt"), "uncommitted\n")

	e := ensure(t, l)
	if e.Made != Converted || e.Base != base {
		t.Fatalf("made %v base %s; want Converted at %s", e.Made, e.Base, base)
	}
	if got := read(t, filepath.Join(e.Work, "a.txt")); got != "uncommitted\n" {
		t.Errorf("a.txt = %q; the lane's change was lost", got)
	}
	if id, found, err := Saved(ctx, e.Tree, "t1"); err != nil || !found || id != snap {
		t.Errorf("Saved(t1) = %s %v %v; want the moved snapshot %s", id, found, err, snap)
	}
	if err := Restore(ctx, e.Tree, snap); err != nil {
		t.Fatal(err)
	}
	if got := read(t, filepath.Join(e.Work, "a.txt")); got != "before the turn\n" {
		t.Errorf("restored a.txt = %q", got)
	}
	if refs := run(t, project, "for-each-ref", "--format=%(refname)", "refs/gatewayd/"); refs != "" {
		t.Errorf("the project still holds the lane's refs: %s", refs)
	}
	if list := run(t, project, "worktree", "list", "--porcelain"); strings.Contains(list, l.Dir) {
		t.Errorf("the project still records the worktree:\n%s", list)
	}
	if again := ensure(t, l); again.Made != Existing {
		t.Errorf("second Ensure: %v", again.Made)
	}
}
