package worktree

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// A snapshot is a commit of every file in the worktree that git would
// show (tracked and untracked; ignored files are not the lane's work and
// are left out), whose parent is the branch's commit at the time. It is
// made with a private index, so the worktree, its index and its branch are
// untouched: `git stash create` would do the same for tracked files only,
// and the files Codex writes are mostly new ones.

// treeLocks serialise what reads or rewrites one worktree's files through
// its snapshot index (Snapshot, Diff, Restore): /diff runs outside the
// lane's queue, beside the snapshot a turn takes as it starts.
var treeLocks sync.Map // git directory → *sync.Mutex

func lockTree(t Tree) func() {
	m, _ := treeLocks.LoadOrStore(t.GitDir, new(sync.Mutex))
	mu := m.(*sync.Mutex)
	mu.Lock()
	return mu.Unlock
}

// Snapshot records the worktree's files as a commit and returns its id.
// It is not named by any ref until Save. When nothing changed since the
// last snapshot (watch.go) it is that snapshot; when a few paths did, git
// looks at those only.
func Snapshot(ctx context.Context, t Tree) (string, error) {
	defer lockTree(t)()
	d, err := t.git()
	if err != nil {
		return "", err
	}
	w := theWatcher()
	last, lastHead, paths, full := w.changes(t.Dir)
	id, err := snapshot(ctx, t, d, last, lastHead, paths, full)
	if err != nil {
		w.failed(t.Dir)
		return "", err
	}
	return id, nil
}

func snapshot(ctx context.Context, t Tree, d repoDirs, last, lastHead string, paths []string, full bool) (string, error) {
	head, err := d.git(ctx, nil, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	if !full && len(paths) == 0 && head == lastHead {
		return last, nil
	}
	tree, err := writeTreeOf(ctx, t, d, paths, full)
	if err != nil {
		return "", err
	}
	id, err := d.git(ctx, nil, "commit-tree", tree, "-p", head, "-m", "gatewayd: snapshot before a turn")
	if err != nil {
		return "", err
	}
	theWatcher().took(t.Dir, id, head)
	return id, nil
}

// writeTree writes all the worktree's files as a tree object (writeTreeOf).
func writeTree(ctx context.Context, t Tree, d repoDirs) (string, error) {
	return writeTreeOf(ctx, t, d, nil, true)
}

// writeTreeOf writes the worktree's files as a tree object through the
// lane's snapshot index, an index of the daemon's own kept between turns
// (begun as a copy of the worktree's): its stat data lets `git add` skip
// every file unchanged since the last snapshot instead of hashing it, and
// its untracked cache skips the directories that did not change. With
// full false, only paths (relative to the worktree) are looked at: the
// rest is as the index has it. A changed ignore or attributes file changes
// what every path means, so it makes the add a full one. The caller holds
// the tree's lock.
func writeTreeOf(ctx context.Context, t Tree, d repoDirs, paths []string, full bool) (string, error) {
	index := filepath.Join(t.GitDir, "gatewayd-snapshot.index")
	if _, err := os.Lstat(index); errors.Is(err, os.ErrNotExist) {
		if err := copyIndex(filepath.Join(t.GitDir, "index"), index); err != nil {
			return "", err
		}
		full = true
	}
	for _, p := range paths {
		if base := filepath.Base(p); base == ".gitignore" || base == ".gitattributes" {
			full = true
		}
	}
	env := []string{"GIT_INDEX_FILE=" + index, "GIT_LITERAL_PATHSPECS=1"}
	switch {
	case full:
		if err := addAll(ctx, d, env[:1]); err != nil {
			return "", err
		}
	case len(paths) > 0:
		if err := addPaths(ctx, d, env, paths); err != nil {
			return "", err
		}
	}
	return d.git(ctx, env, "write-tree")
}

// addAll is `git add -A .`, passing over repositories the lane made with
// no commit (git refuses to record them, which would leave the turn
// without a snapshot): each is excluded and the add run again.
func addAll(ctx context.Context, d repoDirs, env []string) error {
	args := []string{"-c", "core.untrackedCache=true", "add", "-A", "--", "."}
	for range 8 {
		_, err := d.git(ctx, env, args...)
		nested, ok := emptyNested(err)
		if !ok {
			return err
		}
		args = append(args, ":(exclude,literal)"+nested)
	}
	return fmt.Errorf("worktree: too many empty repositories in %s", d.workTree)
}

// emptyNested reads git's "error: 'sub/' does not have a commit checked
// out" and returns sub/.
func emptyNested(err error) (string, bool) {
	if err == nil {
		return "", false
	}
	msg := err.Error()
	i := strings.Index(msg, "error: '")
	j := strings.Index(msg, "' does not have a commit checked out")
	if i < 0 || j < i+8 {
		return "", false
	}
	return msg[i+8 : j], true
}

// outsideNested replaces each path inside a repository the lane made in
// its worktree (a directory with its own .git below the top) by that
// repository's directory: the snapshot records it as a gitlink, and git
// refuses a path inside it.
func outsideNested(top string, paths []string) []string {
	seen := make(map[string]bool, len(paths))
	out := paths[:0:0]
	for _, p := range paths {
		parts := strings.Split(p, string(filepath.Separator))
		for i := 1; i <= len(parts); i++ {
			prefix := filepath.Join(parts[:i]...)
			if i == len(parts) && parts[i-1] != ".git" {
				break
			}
			if parts[i-1] == ".git" {
				p = filepath.Join(parts[:i-1]...)
				break
			}
			if _, err := os.Lstat(filepath.Join(top, prefix, ".git")); err == nil {
				p = prefix
				break
			}
		}
		if p == "" || p == "." {
			continue
		}
		// A directory is named as one, so check-ignore matches "build/".
		if fi, err := os.Lstat(filepath.Join(top, p)); err == nil && fi.IsDir() {
			p += "/"
		}
		if !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	return out
}

// addPaths is `git add -A` of the paths a watch saw change. Git refuses a
// path named explicitly that its ignore rules exclude (where a full add
// passes over it) but adds the others and writes the index: that
// complaint, and only that one, is no failure.
func addPaths(ctx context.Context, d repoDirs, env []string, paths []string) error {
	present, gone := splitGone(d.workTree, outsideNested(d.workTree, paths))
	// A path gone since is a file to drop from the index, or one made and
	// removed between snapshots, which add would refuse ("did not match").
	if len(gone) > 0 {
		list := strings.Join(gone, "\x00") + "\x00"
		if _, err := d.gitIn(ctx, env, list, "rm", "--cached", "-r", "-q", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
			return err
		}
	}
	if len(present) == 0 {
		return nil
	}
	list := strings.Join(present, "\x00") + "\x00"
	_, err := d.gitIn(ctx, env, list, "-c", "advice.addIgnoredFile=false", "add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul")
	if _, empty := emptyNested(err); empty {
		return addAll(ctx, d, env[:1])
	}
	if onlyIgnored(err) {
		return nil
	}
	return err
}

// splitGone parts paths into those on disk and those not.
func splitGone(top string, paths []string) (present, gone []string) {
	for _, p := range paths {
		if _, err := os.Lstat(filepath.Join(top, p)); err != nil {
			gone = append(gone, strings.TrimSuffix(p, "/"))
		} else {
			present = append(present, p)
		}
	}
	return present, gone
}

// onlyIgnored reports whether git add failed only to say some paths were
// ignored: its complaint is that line and the paths, nothing else.
func onlyIgnored(err error) bool {
	var ge *gitError
	if !errors.As(err, &ge) {
		return false
	}
	lines := strings.Split(ge.stderr, "\n")
	if !strings.HasPrefix(lines[0], "The following paths are ignored by one of your .gitignore files") {
		return false
	}
	for _, l := range lines[1:] {
		if strings.HasPrefix(l, "fatal:") || strings.HasPrefix(l, "error:") || strings.HasPrefix(l, "warning:") {
			return false
		}
	}
	return true
}

func copyIndex(from, to string) error {
	data, err := os.ReadFile(from)
	if errors.Is(err, os.ErrNotExist) {
		return nil // a fresh worktree without an index: add builds one
	}
	if err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}

// Save names the snapshot id as the one taken before the turn name.
func Save(ctx context.Context, t Tree, name, id string) error {
	d, err := t.git()
	if err != nil {
		return err
	}
	_, err = d.git(ctx, nil, "update-ref", t.turnRef(name), id)
	return err
}

// Saved is the snapshot taken before the turn name; found is false when
// none was (the turn ran without a worktree, or before a crash could save
// it).
func Saved(ctx context.Context, t Tree, name string) (id string, found bool, err error) {
	d, err := t.git()
	if err != nil {
		return "", false, err
	}
	ref := t.turnRef(name)
	if !d.ok(ctx, "show-ref", "-q", "--verify", ref) {
		return "", false, nil
	}
	id, err = d.git(ctx, nil, "rev-parse", "--verify", ref+"^{commit}")
	return id, err == nil, err
}

// Drop forgets the snapshot taken before the turn name.
func Drop(ctx context.Context, t Tree, name string) error {
	d, err := t.git()
	if err != nil {
		return err
	}
	_, err = d.git(ctx, nil, "update-ref", "-d", t.turnRef(name))
	return err
}

// Prune keeps the newest keep snapshots of the lane and forgets the rest,
// so the objects of long-gone turns can be collected. Commit dates have
// one-second steps, so snapshots of one second tie; callers keep more
// than /undo promises to reach, and a tie at the edge costs nothing.
func Prune(ctx context.Context, t Tree, keep int) (dropped int, err error) {
	d, err := t.git()
	if err != nil {
		return 0, err
	}
	out, err := d.git(ctx, nil, "for-each-ref", "--sort=-committerdate", "--format=%(refname)", t.refs()+"/turns/")
	if err != nil || out == "" {
		return 0, err
	}
	refs := strings.Split(out, "\n")
	if len(refs) <= keep {
		return 0, nil
	}
	var cmds strings.Builder
	for _, ref := range refs[keep:] {
		fmt.Fprintf(&cmds, "delete %s\n", ref)
	}
	if _, err := d.gitIn(ctx, nil, cmds.String(), "update-ref", "--stdin"); err != nil {
		return 0, err
	}
	return len(refs) - keep, nil
}

// Restore puts the worktree back as the snapshot id recorded it: the
// branch at the snapshot's parent, every file as it was, files made since
// removed (ignored files are left alone), nothing staged.
func Restore(ctx context.Context, t Tree, id string) error {
	defer lockTree(t)()
	d, err := t.git()
	if err != nil {
		return err
	}
	parent, err := d.git(ctx, nil, "rev-parse", "--verify", id+"^")
	if err != nil {
		return err
	}
	// The snapshot's files first, its .gitignore among them; then what the
	// turn created, nested repositories too (-f twice). Removing a
	// .gitignore the turn wrote can uncover files it hid, so the clean
	// runs again until it removes nothing.
	if _, err := d.long().git(ctx, nil, "read-tree", "-u", "--reset", id); err != nil {
		return err
	}
	for range 4 {
		removed, err := d.long().git(ctx, nil, "clean", "-f", "-f", "-d")
		if err != nil {
			return err
		}
		if removed == "" {
			break
		}
	}
	// The branch back; untracked files untracked again.
	_, err = d.git(ctx, nil, "reset", "-q", parent)
	return err
}

// FileChange is one file's lines added and removed.
type FileChange struct {
	Path           string
	Added, Deleted int
	Binary         bool
}

// Changes are the lane's changes since its worktree began.
type Changes struct {
	Files []FileChange
	Patch string // the diff, as `git diff` prints it, up to maxPatch bytes
	// Truncated says the diff was longer than maxPatch and Patch is its
	// start.
	Truncated bool
}

// maxPatch bounds the diff the daemon holds in memory: a lane's files, and
// so its diff, can be as large as its disk quota.
const maxPatch = 8 << 20

// Totals are the lines added and removed over every file.
func (c Changes) Totals() (added, deleted int) {
	for _, f := range c.Files {
		added += f.Added
		deleted += f.Deleted
	}
	return added, deleted
}

// Diff is what the lane changed since its worktree began: committed on its
// branch or not, new files included.
func Diff(ctx context.Context, t Tree) (Changes, error) {
	unlock := lockTree(t)
	d, err := t.git()
	if err != nil {
		unlock()
		return Changes{}, err
	}
	tree, err := writeTree(ctx, t, d)
	unlock()
	if err != nil {
		return Changes{}, err
	}
	stat, err := d.git(ctx, nil, "diff", "--no-ext-diff", "--no-textconv", "--numstat", t.Base, tree)
	if err != nil {
		return Changes{}, err
	}
	patch, truncated, err := d.run(ctx, nil, "", maxPatch, "diff", "--no-ext-diff", "--no-textconv", t.Base, tree)
	if err != nil {
		return Changes{}, err
	}
	return Changes{Files: parseNumstat(stat), Patch: patch, Truncated: truncated}, nil
}

// parseNumstat reads `git diff --numstat`: "added<TAB>deleted<TAB>path",
// "-" for both counts of a binary file.
func parseNumstat(out string) []FileChange {
	var files []FileChange
	for _, line := range strings.Split(out, "\n") {
		parts := strings.SplitN(line, "\t", 3)
		if len(parts) != 3 {
			continue
		}
		f := FileChange{Path: parts[2]}
		if parts[0] == "-" && parts[1] == "-" {
			f.Binary = true
		} else {
			f.Added, _ = strconv.Atoi(parts[0])
			f.Deleted, _ = strconv.Atoi(parts[1])
		}
		files = append(files, f)
	}
	return files
}
