package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Found is one lane's worktree found on disk by List: Slug names the lane
// and ProjectDir the project (files.DirName of each).
type Found struct {
	Slug, ProjectDir string
	Dir              string
	// Own says it is a repository of the lane's own or an older linked
	// worktree: anything else under the root is not the daemon's and is
	// left alone.
	Own bool
}

// List finds the lanes' worktrees under root (<root>/<lane>/<project>),
// without following links. The pool's ready worktrees (PoolDir) are no
// lane's: a lane's directory never starts with a dot (files.DirName).
func List(root string) ([]Found, error) {
	lanes, err := os.ReadDir(root)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("worktree: %w", err)
	}
	var out []Found
	for _, lane := range lanes {
		if !lane.IsDir() || strings.HasPrefix(lane.Name(), ".") {
			continue
		}
		projects, err := os.ReadDir(filepath.Join(root, lane.Name()))
		if err != nil {
			continue
		}
		for _, p := range projects {
			if !p.IsDir() {
				continue
			}
			dir := filepath.Join(root, lane.Name(), p.Name())
			st := laneRepoState(Lane{Dir: dir})
			out = append(out, Found{Slug: lane.Name(), ProjectDir: p.Name(), Dir: dir, Own: st != laneRepoNone})
		}
	}
	return out, nil
}

// Remove deletes the lane's worktree, its repository (snapshots and all)
// and the branch the project's repository keeps for it. project is "" when
// the project is no longer configured: the worktree still goes, and a
// branch left in a repository the daemon no longer knows is the
// operator's to delete. Links in the worktree are removed, not followed.
func Remove(ctx context.Context, l Lane) error {
	if l.Project != "" {
		if r, err := openRepo(ctx, l.Project); err == nil {
			createMu.Lock()
			_, err := r.bare().git(ctx, nil, "update-ref", "-d", l.branchRef())
			createMu.Unlock()
			if err != nil {
				return err
			}
		}
	}
	if err := os.RemoveAll(l.Dir); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	// The lane's directory goes with its last worktree.
	_ = os.Remove(filepath.Dir(l.Dir))
	return nil
}

// ModTime is when the worktree's directory or its repository last
// changed (the index moves with every snapshot).
func ModTime(dir string) time.Time {
	var newest time.Time
	for _, p := range []string{dir, filepath.Join(dir, ".git"), filepath.Join(dir, ".git", "index")} {
		if fi, err := os.Lstat(p); err == nil && fi.ModTime().After(newest) {
			newest = fi.ModTime()
		}
	}
	return newest
}
