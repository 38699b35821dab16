package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// Lane names one lane's worktree of one project.
type Lane struct {
	// Project is the project's directory: a repository's top, or a
	// directory inside one (the lane then works in the same directory of
	// its worktree).
	Project string
	// Dir is where the worktree lives (under the state directory).
	Dir string
	// Slug is the lane's name in its branch and refs; it must be a valid
	// ref component (files.DirName gives one).
	Slug string
}

// Branch is the lane's branch: gatewayd/<slug>.
func (l Lane) Branch() string { return "gatewayd/" + l.Slug }

// refs is the lane's namespace for its base and snapshots. Refs under
// refs/ other than refs/heads are shared by all worktrees, so the
// checkout's `git log --all` shows them, and `git gc` keeps what they name.
func (l Lane) refs() string { return "refs/gatewayd/" + l.Slug }

func (l Lane) baseRef() string { return l.refs() + "/base" }

func (l Lane) turnRef(name string) string { return l.refs() + "/turns/" + name }

// Tree is a lane's worktree, ready to work in.
type Tree struct {
	Lane
	// Work is where the lane works: Dir, or the project's subdirectory
	// within it.
	Work string
	// GitDir is the worktree's own git directory (<common>/worktrees/<n>)
	// and CommonDir the repository's: git run inside the worktree writes
	// to both, so a sandboxed lane needs them writable.
	GitDir, CommonDir string
	// Base is the commit the worktree began from: /diff is measured
	// against it.
	Base string
}

// Made says how Ensure found the worktree.
type Made int

const (
	Existing  Made = iota // it was there
	Created               // it did not exist: made from the project's HEAD
	Recreated             // it had been deleted: made again from its branch
)

// Ensured is a usable worktree and what Ensure had to do for it.
type Ensured struct {
	Tree
	Made Made
	// Dirty and Detached describe the project's checkout when the
	// worktree was created: its uncommitted changes are not in the
	// worktree, and a detached HEAD gives the commit, not a branch.
	Dirty, Detached bool
}

// createMu serialises creating worktrees: `git worktree prune` must not
// run while another lane's `git worktree add` is half done.
var createMu sync.Mutex

// Ensure returns the lane's worktree, creating it from the project's HEAD
// on a branch of its own the first time and again from that branch when it
// was deleted. A project that is not in a git repository is ErrNotRepo.
func Ensure(ctx context.Context, l Lane) (Ensured, error) {
	repo, err := openRepo(ctx, l.Project)
	if err != nil {
		return Ensured{}, err
	}
	if isWorktree(ctx, l.Dir) {
		t, err := repo.tree(ctx, l)
		return Ensured{Tree: t, Made: Existing}, err
	}
	createMu.Lock()
	defer createMu.Unlock()
	return repo.create(ctx, l)
}

// Present reports whether the worktree of t is still on disk (cheap: one
// stat), so a lane notices one deleted by hand before its next turn.
func Present(t Tree) bool {
	fi, err := os.Stat(filepath.Join(t.Dir, ".git"))
	return err == nil && !fi.IsDir()
}

// repo is the repository a project directory is in.
type repo struct {
	top, prefix, common string
}

func openRepo(ctx context.Context, project string) (repo, error) {
	out, err := git(ctx, project, nil, "rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir", "--show-prefix")
	if err != nil {
		return repo{}, fmt.Errorf("%w: %s", ErrNotRepo, project)
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 2 || lines[0] == "" {
		return repo{}, fmt.Errorf("%w: %s (a bare repository)", ErrNotRepo, project)
	}
	r := repo{top: lines[0], common: lines[1]}
	if len(lines) > 2 {
		r.prefix = lines[2]
	}
	if !gitOK(ctx, r.top, "rev-parse", "-q", "--verify", "HEAD^{commit}") {
		return repo{}, fmt.Errorf("%w: %s has no commit yet", ErrNotRepo, project)
	}
	return r, nil
}

// isWorktree reports whether dir is the top of a git worktree.
func isWorktree(ctx context.Context, dir string) bool {
	fi, err := os.Stat(filepath.Join(dir, ".git"))
	if err != nil || fi.IsDir() {
		return false
	}
	top, err := git(ctx, dir, nil, "rev-parse", "--show-toplevel")
	return err == nil && sameDir(top, dir)
}

func sameDir(a, b string) bool {
	ra, errA := filepath.EvalSymlinks(a)
	rb, errB := filepath.EvalSymlinks(b)
	return errA == nil && errB == nil && ra == rb
}

// create makes the lane's worktree: from its branch when the branch is
// left from an earlier worktree (deleted by hand), else on a new branch
// from the project's HEAD.
func (r repo) create(ctx context.Context, l Lane) (Ensured, error) {
	if err := clearDir(l.Dir); err != nil {
		return Ensured{}, err
	}
	if err := os.MkdirAll(filepath.Dir(l.Dir), 0o700); err != nil {
		return Ensured{}, fmt.Errorf("worktree: %w", err)
	}
	// A worktree deleted by hand leaves git's record of it, which keeps
	// its branch "checked out"; prune forgets records whose directory is
	// gone.
	if _, err := git(ctx, r.top, nil, "worktree", "prune"); err != nil {
		return Ensured{}, err
	}
	e := Ensured{Made: Created}
	if gitOK(ctx, r.top, "show-ref", "-q", "--verify", "refs/heads/"+l.Branch()) {
		e.Made = Recreated
		if _, err := git(ctx, r.top, nil, "worktree", "add", "-q", l.Dir, l.Branch()); err != nil {
			return Ensured{}, err
		}
	} else {
		e.Dirty, e.Detached = r.checkoutState(ctx)
		if _, err := git(ctx, r.top, nil, "worktree", "add", "-q", "-b", l.Branch(), l.Dir, "HEAD"); err != nil {
			return Ensured{}, err
		}
	}
	t, err := r.tree(ctx, l)
	e.Tree = t
	return e, err
}

// clearDir removes dir if it is an empty directory (left by a failed
// creation); a non-empty one that is not a worktree is refused rather
// than overwritten.
func clearDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("worktree: %w", err)
	case len(entries) > 0:
		return fmt.Errorf("worktree: %s exists and is not a git worktree; move it away", dir)
	}
	return os.Remove(dir)
}

// checkoutState says whether the project's checkout has uncommitted
// changes and whether its HEAD is detached.
func (r repo) checkoutState(ctx context.Context) (dirty, detached bool) {
	status, err := git(ctx, r.top, nil, "status", "--porcelain")
	dirty = err == nil && status != ""
	detached = !gitOK(ctx, r.top, "symbolic-ref", "-q", "HEAD")
	return dirty, detached
}

// tree describes the lane's existing worktree, recording its base the
// first time (or, for a branch older than its base ref, where it forked).
func (r repo) tree(ctx context.Context, l Lane) (Tree, error) {
	gitDir, err := git(ctx, l.Dir, nil, "rev-parse", "--absolute-git-dir")
	if err != nil {
		return Tree{}, err
	}
	t := Tree{Lane: l, Work: filepath.Join(l.Dir, r.prefix), GitDir: gitDir, CommonDir: r.common}
	if base, err := git(ctx, l.Dir, nil, "rev-parse", "-q", "--verify", l.baseRef()+"^{commit}"); err == nil {
		t.Base = base
		return t, nil
	}
	base, err := git(ctx, l.Dir, nil, "merge-base", "HEAD", r.headOf(ctx))
	if err != nil {
		return Tree{}, err
	}
	if _, err := git(ctx, l.Dir, nil, "update-ref", l.baseRef(), base); err != nil {
		return Tree{}, err
	}
	t.Base = base
	return t, nil
}

// headOf is the commit the project's checkout is at.
func (r repo) headOf(ctx context.Context) string {
	head, err := git(ctx, r.top, nil, "rev-parse", "HEAD")
	if err != nil {
		return "HEAD"
	}
	return head
}

// IsRepo reports whether dir is inside a git work tree (cheap: it looks
// for a .git entry in dir and its parents, running no git).
func IsRepo(dir string) bool {
	for d := filepath.Clean(dir); ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return true
		}
		parent := filepath.Dir(d)
		if parent == d {
			return false
		}
		d = parent
	}
}
