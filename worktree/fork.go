package worktree

import (
	"context"
	"fmt"
)

// Fork makes child's worktree start from parent's files as they are now
// (/fork): on the branch gatewayd/<child slug> at parent's branch head,
// with parent's uncommitted changes (new files too) uncommitted in it, and
// parent's base as its own, so /diff in the fork shows everything since the
// parent began. The parent's worktree is not touched (its files are read
// through a snapshot, fetched into the child's repository from the
// parent's, both the daemon's). A child worktree that already exists is
// refused: a fork is always a new lane.
func Fork(ctx context.Context, parent Tree, child Lane) (Tree, error) {
	return (*Pool)(nil).Fork(ctx, parent, child)
}

// Fork is Fork starting from a ready worktree of p when it has one of the
// project's HEAD: the snapshot's files are then written over a checkout
// that is there already, which costs what differs from the project's
// HEAD (what the parent changed) instead of every file.
func (p *Pool) Fork(ctx context.Context, parent Tree, child Lane) (Tree, error) {
	snap, err := Snapshot(ctx, parent)
	if err != nil {
		return Tree{}, err
	}
	r, err := openRepo(ctx, child.Project)
	if err != nil {
		return Tree{}, err
	}
	if laneRepoState(child) != laneRepoNone {
		return Tree{}, fmt.Errorf("worktree: %s already exists; a fork needs a new lane", child.Dir)
	}
	createMu.Lock()
	defer createMu.Unlock()
	if err := clearDir(child.Dir); err != nil {
		return Tree{}, err
	}
	// The project's repository pins the fork's base, as it pins every
	// lane's starting commit.
	if _, err := r.bare().git(ctx, nil, "update-ref", child.branchRef(), parent.Base); err != nil {
		return Tree{}, err
	}
	forkRef := parent.refs() + "/fork"
	pd, err := parent.git()
	if err != nil {
		return Tree{}, err
	}
	if _, err := pd.git(ctx, nil, "update-ref", forkRef, snap); err != nil {
		return Tree{}, err
	}
	defer func() { _, _ = pd.git(ctx, nil, "update-ref", "-d", forkRef) }()
	d, _, pooled, err := p.takeInto(ctx, r, child)
	if err != nil {
		return Tree{}, err
	}
	if !pooled {
		if d, err = r.initLaneRepo(ctx, child); err != nil {
			return Tree{}, err
		}
	}
	// The branch starts at the snapshot's parent (the parent lane's branch
	// head): the snapshot's files are checked out, and the index set to
	// the branch, leaving the parent's changes in the files, uncommitted,
	// as they were in the parent.
	steps := [][]string{
		{"fetch", "-q", "--no-tags", "--no-write-fetch-head", parent.GitDir, forkRef + ":" + child.refs() + "/forked"},
		{"update-ref", child.branchRef(), snap + "^"},
		{"symbolic-ref", "HEAD", child.branchRef()},
		{"read-tree", "--reset", "-u", snap},
		{"reset", "-q", snap + "^"},
		{"update-ref", "-d", child.refs() + "/forked"},
		{"update-ref", child.baseRef(), parent.Base},
	}
	for _, args := range steps {
		if _, err := d.long().git(ctx, nil, args...); err != nil {
			return Tree{}, err
		}
	}
	return r.tree(ctx, child)
}
