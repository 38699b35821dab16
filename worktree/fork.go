package worktree

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// Fork makes child's worktree start from parent's files as they are now
// (/fork): on the branch gatewayd/<child slug> at parent's branch head,
// with parent's uncommitted changes (new files too) uncommitted in it, and
// parent's base as its own, so /diff in the fork shows everything since the
// parent began. The parent's worktree is not touched (its files are read
// through a snapshot). A child worktree that already exists is refused: a
// fork is always a new lane.
func Fork(ctx context.Context, parent Tree, child Lane) (Tree, error) {
	snap, err := Snapshot(ctx, parent)
	if err != nil {
		return Tree{}, err
	}
	repo, err := openRepo(ctx, child.Project)
	if err != nil {
		return Tree{}, err
	}
	if isWorktree(ctx, child.Dir) {
		return Tree{}, fmt.Errorf("worktree: %s already exists; a fork needs a new lane", child.Dir)
	}
	createMu.Lock()
	defer createMu.Unlock()
	if err := clearDir(child.Dir); err != nil {
		return Tree{}, err
	}
	if err := os.MkdirAll(filepath.Dir(child.Dir), 0o700); err != nil {
		return Tree{}, fmt.Errorf("worktree: %w", err)
	}
	if _, err := git(ctx, repo.top, nil, "worktree", "prune"); err != nil {
		return Tree{}, err
	}
	// The branch starts at the snapshot's parent (the parent lane's branch
	// head): the snapshot is checked out on the new branch, which a mixed
	// reset then moves back one commit, leaving the parent's changes in
	// the files, uncommitted, as they were in the parent.
	if _, err := git(ctx, repo.top, nil, "worktree", "add", "-q", "-B", child.Branch(), child.Dir, snap); err != nil {
		return Tree{}, err
	}
	if _, err := git(ctx, child.Dir, nil, "reset", "-q", snap+"^"); err != nil {
		return Tree{}, err
	}
	if _, err := git(ctx, child.Dir, nil, "update-ref", child.baseRef(), parent.Base); err != nil {
		return Tree{}, err
	}
	return repo.tree(ctx, child)
}
