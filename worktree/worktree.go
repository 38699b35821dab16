package worktree

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
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

func (l Lane) branchRef() string { return "refs/heads/" + l.Branch() }

// refs is the lane's namespace for its base and snapshots, in the lane's
// own repository: no other lane's commands can read them.
func (l Lane) refs() string { return "refs/gatewayd/" + l.Slug }

func (l Lane) baseRef() string { return l.refs() + "/base" }

func (l Lane) turnRef(name string) string { return l.refs() + "/turns/" + name }

// gitDir is the lane's own git directory. Codex's sandbox mounts it
// read-only for the lane's commands.
func (l Lane) gitDir() string { return filepath.Join(l.Dir, ".git") }

// Tree is a lane's worktree, ready to work in.
type Tree struct {
	Lane
	// Work is where the lane works: Dir, or the project's subdirectory
	// within it.
	Work string
	// GitDir is the lane's own repository (Dir/.git). CommonDir is the
	// project's git directory, whose objects the lane's repository
	// borrows: the lane's commands need them readable (never writable).
	GitDir, CommonDir string
	// Base is the commit the worktree began from: /diff is measured
	// against it.
	Base string
	// Format is the repository's object format: "sha1" or "sha256".
	Format string
}

// Objects is the project's object directory, which a lane's commands
// must be able to read for git to work in the worktree.
func (t Tree) Objects() string { return filepath.Join(t.CommonDir, "objects") }

func (t Tree) dirs() repoDirs { return repoDirs{gitDir: t.GitDir, workTree: t.Dir} }

// Made says how Ensure found the worktree.
type Made int

const (
	Existing  Made = iota // it was there
	Created               // it did not exist: made from the project's HEAD
	Recreated             // it had been deleted: made again from its branch
	Converted             // it was a linked worktree of the project's repository: made a repository of its own
)

// Ensured is a usable worktree and what Ensure had to do for it.
type Ensured struct {
	Tree
	Made Made
	// Dirty and Detached describe the project's checkout when the
	// worktree was created: its uncommitted changes are not in the
	// worktree, and a detached HEAD gives the commit, not a branch.
	Dirty, Detached bool
	// Pooled says a created worktree was taken ready from the Pool.
	Pooled bool
}

// createMu serialises creating worktrees: two lanes' branches are written
// into one project repository. It is held for a pooled worktree's
// renames and refs, never for the pool's checkouts.
var createMu sync.Mutex

// Ensure returns the lane's worktree, creating it from the project's HEAD
// on a branch of its own the first time, and again from that branch when
// it was deleted. A project that is not in a git repository is
// ErrNotRepo.
func Ensure(ctx context.Context, l Lane) (Ensured, error) { return (*Pool)(nil).Ensure(ctx, l) }

// Ensure is Ensure taking a ready worktree from p, when it has one of
// the project's HEAD, instead of checking one out.
func (p *Pool) Ensure(ctx context.Context, l Lane) (Ensured, error) {
	r, err := openRepo(ctx, l.Project)
	if err != nil {
		return Ensured{}, err
	}
	if laneRepoState(l) == laneRepoOwn {
		t, err := r.tree(ctx, l)
		return Ensured{Tree: t, Made: Existing}, err
	}
	createMu.Lock()
	defer createMu.Unlock()
	// Looked at again under the lock: another caller (the lane's
	// worktree prepared in the background) may have just made it.
	switch laneRepoState(l) {
	case laneRepoOwn:
		t, err := r.tree(ctx, l)
		return Ensured{Tree: t, Made: Existing}, err
	case laneRepoLinked:
		return r.convert(ctx, l)
	}
	return r.create(ctx, l, p)
}

// Present reports whether the worktree of t is still on disk (cheap: one
// lstat), so a lane notices one deleted by hand before its next turn.
func Present(t Tree) bool { return laneRepoState(t.Lane) == laneRepoOwn }

type laneRepo int

const (
	laneRepoNone   laneRepo = iota
	laneRepoOwn             // Dir/.git is a directory: the lane's repository
	laneRepoLinked          // Dir/.git is a file: a linked worktree of an older gatewayd
)

// laneRepoState looks at Dir/.git without following a link: a symlink
// there is not the daemon's and counts as nothing.
func laneRepoState(l Lane) laneRepo {
	fi, err := os.Lstat(l.gitDir())
	switch {
	case err != nil:
		return laneRepoNone
	case fi.IsDir():
		if hd, err := os.Lstat(filepath.Join(l.gitDir(), "HEAD")); err == nil && hd.Mode().IsRegular() {
			return laneRepoOwn
		}
		return laneRepoNone
	case fi.Mode().IsRegular():
		return laneRepoLinked
	}
	return laneRepoNone
}

// repo is the project's repository: its top, the project's directory
// within it, its git directory (the checkout's own, which may be a linked
// worktree's: its HEAD is the checkout's) and common directory (refs and
// objects), its object format, and the "-c" overrides every git on it
// gets (projectOverrides).
type repo struct {
	top, prefix, gitDir, common, format string
	overrides                           []string
}

func (r repo) dirs() repoDirs {
	return repoDirs{gitDir: r.gitDir, workTree: r.top, overrides: r.overrides}
}

// bare is the project's repository read as a repository only (no work
// tree): HEAD, refs and objects.
func (r repo) bare() repoDirs { return repoDirs{gitDir: r.gitDir, overrides: r.overrides} }

func (r repo) objects() string { return filepath.Join(r.common, "objects") }

func openRepo(ctx context.Context, project string) (repo, error) {
	out, err := discover(ctx, project, "rev-parse", "--path-format=absolute", "--show-toplevel", "--absolute-git-dir",
		"--git-common-dir", "--show-object-format", "--show-prefix")
	if errors.Is(err, ErrNotRepo) {
		return repo{}, err
	}
	if err != nil {
		return repo{}, err
	}
	lines := strings.Split(out, "\n")
	if len(lines) < 4 || lines[0] == "" {
		return repo{}, fmt.Errorf("%w: %s (a bare repository)", ErrNotRepo, project)
	}
	r := repo{top: lines[0], gitDir: lines[1], common: lines[2], format: lines[3], overrides: trustProject}
	if len(lines) > 4 {
		r.prefix = lines[4]
	}
	if !r.bare().ok(ctx, "rev-parse", "-q", "--verify", "HEAD^{commit}") {
		return repo{}, fmt.Errorf("%w: %s has no commit yet", ErrNotRepo, project)
	}
	r.overrides = append(slices.Clip(trustProject), projectOverrides(ctx, r.bare())...)
	return r, nil
}

// projectOverrides neutralise the filter drivers the project's config
// names (its own or included): in older versions a lane's commands could
// write the project's .git, so its config may hold a filter a lane
// planted, and the daemon's git on the checkout (status) would run it.
// An empty clean, smudge or process command is no filter at all. The
// operator's own filters (Git LFS) are not applied by the daemon either:
// it only reads the checkout's state and makes lanes' worktrees.
func projectOverrides(ctx context.Context, d repoDirs) []string {
	out, err := d.git(ctx, nil, "config", "--name-only", "--get-regexp", `^filter\..*\.(clean|smudge|process)$`)
	if err != nil || out == "" {
		return nil
	}
	var overrides []string
	for _, key := range strings.Split(out, "\n") {
		if key != "" && !slices.Contains(overrides, key+"=") {
			overrides = append(overrides, "-c", key+"=")
		}
	}
	return overrides
}

// ObjectDirsOf are the object directories lanes' worktrees of the project
// read: the project's and, following git's alternates (at most 5 deep, as
// git does), those it borrows from; nil when it is not a git repository.
func ObjectDirsOf(ctx context.Context, project string) []string {
	r, err := openRepo(ctx, project)
	if err != nil {
		return nil
	}
	dirs := []string{r.objects()}
	for i := 0; i < len(dirs) && len(dirs) <= 6; i++ {
		data, err := os.ReadFile(filepath.Join(dirs[i], "info", "alternates"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(line)
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			if !filepath.IsAbs(line) {
				line = filepath.Join(dirs[i], line)
			}
			if line = filepath.Clean(line); !slices.Contains(dirs, line) {
				dirs = append(dirs, line)
			}
		}
	}
	return dirs
}

// create makes the lane's repository and checks out its branch: the
// branch as the project's repository records it when there is one (a
// worktree deleted by hand), else a new branch at the project's HEAD,
// taken ready from the pool when it has one.
func (r repo) create(ctx context.Context, l Lane, p *Pool) (Ensured, error) {
	if err := clearDir(l.Dir); err != nil {
		return Ensured{}, err
	}
	if start, err := r.bare().git(ctx, nil, "rev-parse", "-q", "--verify", l.branchRef()+"^{commit}"); err == nil {
		return r.checkoutNew(ctx, l, start, Ensured{Made: Recreated})
	}
	e, pooled, err := r.createPooled(ctx, l, p)
	if err != nil || pooled {
		return e, err
	}
	return r.createChecked(ctx, l, e)
}

// createPooled takes the lane's worktree ready from p; without one (or
// without a pool) it returns pooled false and the checkout's state, for
// create to check the worktree out. The project's status (a git status
// of all its files) is the slowest step once the checkout is taken
// ready: it runs beside the take.
func (r repo) createPooled(ctx context.Context, l Lane, p *Pool) (e Ensured, pooled bool, err error) {
	state := make(chan [2]bool, 1)
	go func() { dirty, detached := r.checkoutState(ctx); state <- [2]bool{dirty, detached} }()
	d, start, pooled, err := p.takeInto(ctx, r, l)
	if err == nil && pooled {
		err = r.pinAndPoint(ctx, d, l, start)
	}
	st := <-state
	e = Ensured{Made: Created, Dirty: st[0], Detached: st[1], Pooled: pooled}
	if err != nil || !pooled {
		return e, false, err
	}
	e.Tree, err = r.tree(ctx, l)
	return e, true, err
}

// createChecked is create checking out the project's HEAD.
func (r repo) createChecked(ctx context.Context, l Lane, e Ensured) (Ensured, error) {
	start, err := r.bare().git(ctx, nil, "rev-parse", "HEAD^{commit}")
	if err != nil {
		return Ensured{}, err
	}
	return r.checkoutNew(ctx, l, start, e)
}

// pinAndPoint writes a pooled worktree's refs (its files and index are
// start's already): the project's pin, then the lane's branch and base
// in one transaction, and HEAD on the branch.
func (r repo) pinAndPoint(ctx context.Context, d repoDirs, l Lane, start string) error {
	if err := r.pin(ctx, l, start); err != nil {
		return err
	}
	refs := fmt.Sprintf("update %s %s\nupdate %s %s\n", l.branchRef(), start, l.baseRef(), start)
	if _, err := d.gitIn(ctx, nil, refs, "update-ref", "--stdin"); err != nil {
		return err
	}
	_, err := d.git(ctx, nil, "symbolic-ref", "HEAD", l.branchRef())
	return err
}

// checkoutNew makes the lane's repository at l.Dir and checks start out
// in it on the lane's branch.
func (r repo) checkoutNew(ctx context.Context, l Lane, start string, e Ensured) (Ensured, error) {
	if e.Made == Created {
		if err := r.pin(ctx, l, start); err != nil {
			return Ensured{}, err
		}
	}
	d, err := r.initLaneRepo(ctx, l)
	if err != nil {
		return Ensured{}, err
	}
	if err := checkout(ctx, d.long(), l, start); err != nil {
		return Ensured{}, err
	}
	e.Tree, err = r.tree(ctx, l)
	return e, err
}

// pin names the lane's starting commit in the project's repository, so
// `git gc` there keeps the objects the lane's repository borrows.
func (r repo) pin(ctx context.Context, l Lane, start string) error {
	_, err := r.bare().git(ctx, nil, "update-ref", l.branchRef(), start)
	return err
}

// initLaneRepo makes Dir/.git: an empty repository with no hooks (no
// template) whose objects come from the project's repository through
// alternates, read-only.
func (r repo) initLaneRepo(ctx context.Context, l Lane) (repoDirs, error) {
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return repoDirs{}, fmt.Errorf("worktree: %w", err)
	}
	// No template: no sample hooks, nothing but what git needs. The
	// repository is not bare and records no core.worktree: the lane's
	// own git finds it as the .git of its working directory.
	if _, err := (repoDirs{gitDir: l.gitDir()}).git(ctx, nil, "init", "-q", "--template=", "--object-format="+r.format); err != nil {
		return repoDirs{}, err
	}
	d := repoDirs{gitDir: l.gitDir(), workTree: l.Dir}
	if _, err := repair(l.gitDir(), r.objects(), r.format); err != nil {
		return repoDirs{}, err
	}
	return d, nil
}

// checkout puts the lane's branch at start and its files as start has
// them.
func checkout(ctx context.Context, d repoDirs, l Lane, start string) error {
	steps := [][]string{
		{"update-ref", l.branchRef(), start},
		{"symbolic-ref", "HEAD", l.branchRef()},
		{"read-tree", "--reset", "-u", start},
	}
	for _, args := range steps {
		if _, err := d.git(ctx, nil, args...); err != nil {
			return err
		}
	}
	return nil
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
	status, err := r.dirs().git(ctx, nil, "status", "--porcelain", "--ignore-submodules=all")
	dirty = err == nil && status != ""
	detached = !r.bare().ok(ctx, "symbolic-ref", "-q", "HEAD")
	return dirty, detached
}

// tree describes the lane's existing worktree, recording its base the
// first time (or, for a branch older than its base ref, where it forked).
func (r repo) tree(ctx context.Context, l Lane) (Tree, error) {
	t := Tree{Lane: l, Work: filepath.Join(l.Dir, r.prefix), GitDir: l.gitDir(), CommonDir: r.common, Format: r.format}
	d, err := t.git()
	if err != nil {
		return Tree{}, err
	}
	if base, err := d.git(ctx, nil, "rev-parse", "-q", "--verify", l.baseRef()+"^{commit}"); err == nil {
		t.Base = base
		return t, nil
	}
	head, err := r.bare().git(ctx, nil, "rev-parse", "HEAD^{commit}")
	if err != nil {
		return Tree{}, err
	}
	base, err := d.git(ctx, nil, "merge-base", "HEAD", head)
	if err != nil {
		return Tree{}, err
	}
	if _, err := d.git(ctx, nil, "update-ref", l.baseRef(), base); err != nil {
		return Tree{}, err
	}
	t.Base = base
	return t, nil
}

// convert turns a linked worktree an older gatewayd made (its .git a file
// pointing into the project's repository, which the lane's commands could
// write) into a repository of the lane's own, keeping its files as they
// are: the branch, its base and its snapshots are read from the project's
// repository (never through the lane's .git file), the snapshots move to
// the lane's repository, and the project's record of the worktree goes.
func (r repo) convert(ctx context.Context, l Lane) (Ensured, error) {
	start, err := r.bare().git(ctx, nil, "rev-parse", "-q", "--verify", l.branchRef()+"^{commit}")
	if err != nil {
		return Ensured{}, fmt.Errorf("worktree: %s is a linked worktree without its branch %s; move it away", l.Dir, l.Branch())
	}
	if err := os.Remove(l.gitDir()); err != nil {
		return Ensured{}, fmt.Errorf("worktree: %w", err)
	}
	d, err := r.initLaneRepo(ctx, l)
	if err != nil {
		return Ensured{}, err
	}
	refs, _ := r.bare().git(ctx, nil, "for-each-ref", "--format=%(refname) %(objectname)", l.refs()+"/")
	var moves, drops strings.Builder
	fmt.Fprintf(&moves, "update %s %s\n", l.branchRef(), start)
	for _, line := range strings.Split(refs, "\n") {
		if ref, id, ok := strings.Cut(line, " "); ok {
			fmt.Fprintf(&moves, "update %s %s\n", ref, id)
			fmt.Fprintf(&drops, "delete %s\n", ref)
		}
	}
	// The files stay as the lane left them; only the index is rebuilt
	// from the branch, so uncommitted changes stay uncommitted.
	steps := []func() error{
		func() error { _, err := d.gitIn(ctx, nil, moves.String(), "update-ref", "--stdin"); return err },
		func() error { _, err := d.git(ctx, nil, "symbolic-ref", "HEAD", l.branchRef()); return err },
		func() error { _, err := d.git(ctx, nil, "read-tree", start); return err },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return Ensured{}, err
		}
	}
	if drops.Len() > 0 {
		// The snapshots' objects are in the project's repository, where
		// nothing names them once their refs go: copy them first.
		if err := r.copyObjects(ctx, d, refs, start); err != nil {
			return Ensured{}, err
		}
		_, _ = r.bare().gitIn(ctx, nil, drops.String(), "update-ref", "--stdin")
	}
	r.forgetLinked(l)
	t, err := r.tree(ctx, l)
	return Ensured{Tree: t, Made: Converted}, err
}

// copyObjects packs the objects the refs (lines "refname id") reach and
// start does not, from the project's repository into the lane's: git
// pack-objects piped into git index-pack.
func (r repo) copyObjects(ctx context.Context, lane repoDirs, refs, start string) error {
	var revs strings.Builder
	for _, line := range strings.Split(refs, "\n") {
		if _, id, ok := strings.Cut(line, " "); ok {
			revs.WriteString(id + "\n")
		}
	}
	revs.WriteString("^" + start + "\n")
	ctx, cancel := context.WithTimeout(ctx, checkoutTimeout)
	defer cancel()
	pack := r.bare().command(ctx, nil, "pack-objects", "--revs", "--stdout", "-q")
	pack.Stdin = strings.NewReader(revs.String())
	index := lane.command(ctx, nil, "index-pack", "--stdin", "--fix-thin")
	pipe, err := pack.StdoutPipe()
	if err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	index.Stdin = pipe
	packErr, indexErr := &cappedBuffer{limit: 32 << 10}, &cappedBuffer{limit: 32 << 10}
	pack.Stderr, index.Stderr = packErr, indexErr
	if err := pack.Start(); err != nil {
		return fmt.Errorf("worktree: git pack-objects: %w", err)
	}
	indexRun := index.Run()
	if err := pack.Wait(); err != nil || indexRun != nil {
		return fmt.Errorf("worktree: copying the lane's snapshots: %s",
			firstLine(strings.TrimSpace(packErr.String()+indexErr.String()+" "+errors.Join(err, indexRun).Error())))
	}
	return nil
}

// forgetLinked removes the project repository's record of the lane's old
// linked worktree, found by the path it records (never by the lane's .git
// file, which the lane could have pointed anywhere), so `git worktree
// list` no longer shows it and its branch is no longer checked out.
func (r repo) forgetLinked(l Lane) {
	records := filepath.Join(r.common, "worktrees")
	entries, err := os.ReadDir(records)
	if err != nil {
		return
	}
	want := l.gitDir()
	for _, e := range entries {
		if !e.IsDir() || e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		data, err := os.ReadFile(filepath.Join(records, e.Name(), "gitdir"))
		if err == nil && strings.TrimSpace(string(data)) == want {
			_ = os.RemoveAll(filepath.Join(records, e.Name()))
		}
	}
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
