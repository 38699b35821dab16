package daemon

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/worktree"
)

type lanesAt []store.Lane

func (l lanesAt) Lanes(context.Context, int) ([]store.Lane, error) { return l, nil }

// Prune removes the worktree, repository and project branch of a lane
// idle past the retention and of a lane the store has forgotten (by its
// directory's age), and keeps an active lane's worktree, a forgotten
// lane's recent one, and what under the root is not a worktree.
func TestPruneWorktreesRemovesWhatItShouldAndNothingElse(t *testing.T) {
	ctx := context.Background()
	repo := filepath.Join(t.TempDir(), "app")
	gitIn(t, "", "init", "-q", "-b", "main", repo)
	if err := os.WriteFile(filepath.Join(repo, "README"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	gitIn(t, repo, "add", "-A")
	gitIn(t, repo, "commit", "-q", "-m", "initial")
	cfg := &config.Config{StateDir: t.TempDir(), Projects: map[string]string{"app": repo}}
	cfg.Lanes.Worktrees, cfg.Lanes.WorktreeRetention = true, 30*24*time.Hour
	now := time.Now()
	mk := func(key string) string {
		l := worktree.Lane{Project: repo, Dir: filepath.Join(cfg.WorktreesDir(), files.DirName(key), files.DirName("app")), Slug: files.DirName(key)}
		if _, err := worktree.Ensure(ctx, l); err != nil {
			t.Fatal(err)
		}
		return l.Dir
	}
	active, idle, gone, recent := mk("v1:api:active"), mk("v1:api:idle"), mk("v1:api:gone"), mk("v1:api:recent")
	old := now.Add(-40 * 24 * time.Hour)
	for _, p := range []string{gone, filepath.Join(gone, ".git"), filepath.Join(gone, ".git", "index")} {
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
	}
	// The pool's ready worktree is no lane's, however old.
	cfg.Worktrees.Pool = 1
	if err := worktreePool(cfg).Fill(ctx, repo, files.DirName("app")); err != nil {
		t.Fatal(err)
	}
	pool := filepath.Join(cfg.WorktreesDir(), worktree.PoolDir)
	if err := filepath.Walk(pool, func(p string, _ os.FileInfo, err error) error {
		if err == nil && !strings.Contains(p, string(filepath.Separator)+".git"+string(filepath.Separator)) {
			err = os.Chtimes(p, old, old)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(cfg.WorktreesDir(), "not-a-lane", "dir")
	if err := os.MkdirAll(foreign, 0o700); err != nil {
		t.Fatal(err)
	}
	st := lanesAt{{SessionKey: "v1:api:active", LastActiveAt: now.Add(-time.Hour)}, {SessionKey: "v1:api:idle", LastActiveAt: old}}

	removed, err := PruneWorktrees(ctx, cfg, st, now)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(removed)
	want := []string{gone, idle}
	slices.Sort(want)
	if !slices.Equal(removed, want) {
		t.Errorf("removed %v; want %v", removed, want)
	}
	for _, dir := range []string{active, recent, foreign, pool} {
		if _, err := os.Stat(dir); err != nil {
			t.Errorf("%s was removed: %v", dir, err)
		}
	}
	for _, dir := range want {
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("%s is still there: %v", dir, err)
		}
	}
	if n := worktreePool(cfg).Count(files.DirName("app")); n != 1 {
		t.Errorf("the pool holds %d ready worktrees after pruning; want its 1", n)
	}
	branches := gitIn(t, repo, "for-each-ref", "--format=%(refname:short)", "refs/heads/gatewayd/")
	for key, kept := range map[string]bool{"v1:api:active": true, "v1:api:recent": true, "v1:api:idle": false, "v1:api:gone": false} {
		if strings.Contains(branches, files.DirName(key)) != kept {
			t.Errorf("branch of %s kept = %v; want %v (branches %q)", key, !kept, kept, branches)
		}
	}
	cfg.Lanes.WorktreeRetention = 0
	if removed, err := PruneWorktrees(ctx, cfg, lanesAt{}, now.Add(1000*time.Hour)); err != nil || len(removed) != 0 {
		t.Errorf("retention 0 removed %v, %v", removed, err)
	}
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	if dir != "" {
		args = append([]string{"-C", dir}, args...)
	}
	cmd := exec.Command("git", args...)
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@l", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@l")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}
