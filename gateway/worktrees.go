package gateway

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/worktree"
)

// Worktrees (lanes.worktrees): a lane whose project is a git
// repository works in a git worktree of its own,
// <root>/<lane>/<project>, on the branch gatewayd/<lane>, made from the
// project's HEAD at the lane's first turn there. Two lanes on one
// repository never write into each other's files, and the checkout itself
// is never written by a lane. The path is derived from the lane and the
// project, so the worktree outlives /new, rotation and restarts without
// being stored; one deleted by hand is made again from its branch.
//
// Before each turn the worktree's files are snapshotted (a commit named
// refs/gatewayd/<lane>/turns/<turn id> once codex names the turn), which
// is what /undo restores.
//
// With worktrees.pool a lane's first turn and /fork take a
// ready worktree from the pool the daemon keeps filled, instead of
// waiting for a checkout of every file; and a lane that picks a project
// with /project has its worktree prepared at once, in the background.

// keepSnapshots is how many turns' snapshots a lane keeps: /undo promises
// at least 20 turns back.
const keepSnapshots = 50

// gitTimeout bounds the git commands run outside a turn's context.
const gitTimeout = time.Minute

// worktrees gives each lane on a git project its worktree.
type worktrees struct {
	root     string    // <state_dir>/worktrees
	projects *projects // the lane's project and, without a worktree, its directory
	out      *deliverer
	log      *zap.Logger
	pool     *worktree.Pool  // ready worktrees (worktrees.pool); nil: none
	base     context.Context // background preparation ends with it
	confined bool            // lanes are isolated (codex.isolation: lanes): their roots are granted one by one

	mu    sync.Mutex
	trees map[string]worktree.Tree // by worktree directory
	// making is each worktree being made now, closed when it is: a turn
	// waits for its lane's background preparation rather than racing it.
	making map[string]chan struct{}
	// untold are worktrees made without a lane to tell (in the
	// background): the lane's next turn says what its first would have.
	untold map[string]worktree.Ensured
	// pending is each lane's snapshot taken before its running turn, saved
	// under the turn's id when codex names it.
	pending map[string]string
	// toldNotRepo remembers the lanes and projects logged as not git
	// repositories, so the log says it once, not every turn.
	toldNotRepo map[string]bool
}

func newWorktrees(root string, p *projects, out *deliverer, log *zap.Logger) *worktrees {
	return &worktrees{root: root, projects: p, out: out, log: log, base: context.Background(),
		trees: make(map[string]worktree.Tree), pending: make(map[string]string), toldNotRepo: make(map[string]bool),
		making: make(map[string]chan struct{}), untold: make(map[string]worktree.Ensured)}
}

func (w *worktrees) on() bool { return w.root != "" }

// register adds the worktree to a lane's turns, threads and /status. Its
// prepare hook runs after the projects module chose the project directory;
// its thread and input hooks grant the worktree's top, to which the
// feature confine adds the lane's own roots in front.
func (w *worktrees) register(h *host) {
	if !w.on() {
		return
	}
	h.hooks.prepare = append(h.hooks.prepare, w.prepare)
	h.hooks.ready = append(h.hooks.ready, w.snapshot)
	h.hooks.started = append(h.hooks.started, w.saveSnapshot)
	h.hooks.thread = append(h.hooks.thread, func(_ store.Lane, dir string, cfg *codex.ThreadConfig) {
		w.grantTop(dir, &cfg.Confine)
	})
	h.hooks.input = append(h.hooks.input, func(_ context.Context, t *turn, in *codex.TurnInput) {
		w.grantTop(t.dir, &in.Confine)
	})
	h.hooks.status = append(h.hooks.status, func(_ context.Context, sl store.Lane, b *strings.Builder) {
		b.WriteString(w.status(sl))
	})
	h.hooks.finished = append(h.hooks.finished, func(t *turn, _ codex.TurnResult) {
		if _, ok := w.treeAt(t.dir); ok {
			// /diff and /undo are features: a gateway without one offers
			// no button for it.
			if b := h.commandButtons(commandButton("diff", "Diff"), commandButton("undo", "Undo")); len(b) > 0 {
				t.work.offerOnClose(b)
			}
		}
	})
}

// laneOf names the lane's worktree of the project in dir.
func (w *worktrees) laneOf(sessionKey, projectName, dir string) worktree.Lane {
	slug := files.DirName(sessionKey)
	return worktree.Lane{Project: dir, Dir: filepath.Join(w.root, slug, files.DirName(projectName)), Slug: slug}
}

// prepare moves the turn into the lane's worktree of its project, making
// it first if need be. A project that is not a git repository is worked in
// directly; a worktree that cannot be made fails
// the turn rather than letting it write into the checkout.
func (w *worktrees) prepare(ctx context.Context, t *turn) {
	name, dir := w.projects.chosen(t.sl)
	if name == "" {
		return // no project: the lane's own directory, nothing to share
	}
	tree, err := w.ensure(ctx, t.l.key, t.l, w.laneOf(t.l.key, name, dir))
	switch {
	case errors.Is(err, worktree.ErrNotRepo):
		w.noteNotRepo(t.l, name)
	case err != nil:
		w.log.Error("worktree.failed", zap.String("lane", t.l.key), zap.String("project", name), zap.Error(err))
		t.refusal = "Could not make this conversation's git worktree of project " + name + ": " + briefError(err)
	default:
		t.dir = tree.Work
	}
}

// ensure returns the lane's worktree: from memory while it is on disk,
// else from git (made, or made again, taken from the pool when it can
// be). The lane is told what was made; with l nil (no lane at hand) the
// news waits for its next turn.
func (w *worktrees) ensure(ctx context.Context, key string, l *lane, wl worktree.Lane) (worktree.Tree, error) {
	for {
		tree, e, told, done, wait := w.known(l, wl.Dir)
		switch {
		case wait != nil:
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return worktree.Tree{}, ctx.Err()
			}
		case done:
			if told {
				w.tellMade(ctx, l, e)
			}
			return tree, nil
		}
		return w.make(ctx, key, l, wl)
	}
}

// known is what memory says of the worktree at dir: ready (done, with
// news for l if told), being made (wait), or neither (the caller makes
// it, and is now recorded as making it).
func (w *worktrees) known(l *lane, dir string) (tree worktree.Tree, e worktree.Ensured, told, done bool, wait chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if ch, busy := w.making[dir]; busy {
		return worktree.Tree{}, worktree.Ensured{}, false, false, ch
	}
	if tree, ok := w.trees[dir]; ok && worktree.Present(tree) {
		e, told = w.untold[dir]
		if told && l != nil {
			delete(w.untold, dir)
		}
		return tree, e, told && l != nil, true, nil
	}
	w.making[dir] = make(chan struct{})
	return worktree.Tree{}, worktree.Ensured{}, false, false, nil
}

// make makes (or finds on disk) the lane's worktree; the caller is
// recorded as making it.
func (w *worktrees) make(ctx context.Context, key string, l *lane, wl worktree.Lane) (worktree.Tree, error) {
	e, err := w.pool.Ensure(ctx, wl)
	w.mu.Lock()
	close(w.making[wl.Dir])
	delete(w.making, wl.Dir)
	if err == nil {
		w.trees[wl.Dir] = e.Tree
		if l == nil && e.Made != worktree.Existing {
			w.untold[wl.Dir] = e
		}
	}
	w.mu.Unlock()
	if err != nil {
		return worktree.Tree{}, err
	}
	w.logMade(key, e)
	if l != nil {
		w.tellMade(ctx, l, e)
	}
	return e.Tree, nil
}

// logMade logs a worktree made (pooled: taken ready from the pool) or
// converted.
func (w *worktrees) logMade(key string, e worktree.Ensured) {
	switch e.Made {
	case worktree.Existing:
	case worktree.Converted:
		w.log.Info("worktree.converted", zap.String("lane", key), zap.String("dir", e.Dir), zap.String("branch", e.Branch()))
	default:
		w.log.Info("worktree.made", zap.String("lane", key), zap.String("dir", e.Dir), zap.String("branch", e.Branch()),
			zap.Bool("recreated", e.Made == worktree.Recreated), zap.Bool("pooled", e.Pooled))
	}
}

// prepareSoon makes the lane's worktree of the project it just picked
// in the background (/project), so its first turn finds it ready; the
// lane hears what it would have at that turn.
func (w *worktrees) prepareSoon(sessionKey, name, dir string) {
	if !w.on() || !worktree.IsRepo(dir) {
		return
	}
	wl := w.laneOf(sessionKey, name, dir)
	go func() {
		ctx, cancel := context.WithTimeout(w.base, 15*time.Minute)
		defer cancel()
		if _, err := w.ensure(ctx, sessionKey, nil, wl); err != nil && !errors.Is(err, worktree.ErrNotRepo) && ctx.Err() == nil {
			w.log.Warn("worktree.prepare_failed", zap.String("lane", sessionKey), zap.String("project", name), zap.Error(err))
		}
	}()
}

// tellMade tells the lane about a worktree just made.
func (w *worktrees) tellMade(ctx context.Context, l *lane, e worktree.Ensured) {
	if e.Made == worktree.Existing || e.Made == worktree.Converted {
		return // the same files and branch: nothing the lane needs to hear
	}
	var text string
	switch {
	case e.Made == worktree.Recreated:
		text = fmt.Sprintf("This conversation's worktree %s was missing; made it again from branch %s (changes that were not committed there are lost).",
			e.Dir, e.Branch())
	case e.Dirty:
		text = fmt.Sprintf("Working in a git worktree of its own: %s on branch %s, from the checkout's last commit %s. The checkout has uncommitted changes; they are not in this worktree.",
			e.Work, e.Branch(), short(e.Base))
	case e.Detached:
		text = fmt.Sprintf("Working in a git worktree of its own: %s on branch %s, from commit %s (the checkout is on a detached HEAD).",
			e.Work, e.Branch(), short(e.Base))
	default:
		return // the usual case: /status names it; no notice every new lane
	}
	w.out.Notify(ctx, l.addr, "", text)
}

// noteNotRepo logs, once per lane and project, that the lane works in the
// project's checkout. The lane is not interrupted with a notice: nothing
// changed for it, and /status, /diff and /undo say so when asked.
func (w *worktrees) noteNotRepo(l *lane, project string) {
	key := l.key + "\x00" + project
	w.mu.Lock()
	told := w.toldNotRepo[key]
	w.toldNotRepo[key] = true
	w.mu.Unlock()
	if !told {
		w.log.Info("worktree.not_a_repository", zap.String("lane", l.key), zap.String("project", project))
	}
}

// treeAt is the worktree whose working directory is dir, if it is one.
func (w *worktrees) treeAt(dir string) (worktree.Tree, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, t := range w.trees {
		if t.Work == dir {
			return t, true
		}
	}
	return worktree.Tree{}, false
}

// grantTop adds the worktree's top to the lane's roots when the lane works
// in a subdirectory of it (a project inside a repository): git in the
// lane's working directory finds the lane's repository at the top. The
// whole worktree is the lane's; its .git stays read-only, as every root's.
func (w *worktrees) grantTop(dir string, c *codex.Confinement) {
	if !w.confined {
		return
	}
	if t, ok := w.treeAt(dir); ok && t.Work != t.Dir {
		c.Roots = append(c.Roots, t.Dir)
	}
}

// snapshot records the worktree's files before the turn starts. The
// lane's repository is checked first: its commands cannot write it (the
// sandbox keeps .git read-only), so anything put back is logged as the
// security event it is.
func (w *worktrees) snapshot(ctx context.Context, t *turn) {
	tree, ok := w.treeAt(t.dir)
	if !ok {
		return
	}
	if changed, err := worktree.Repair(tree); len(changed) > 0 || err != nil {
		w.log.Warn("worktree.git_dir_tampered", zap.String("lane", t.l.key), zap.String("dir", tree.GitDir),
			zap.Strings("put_back", changed), zap.Error(err))
	}
	id, err := worktree.Snapshot(ctx, tree)
	if err != nil {
		w.log.Warn("worktree.snapshot_failed", zap.String("lane", t.l.key), zap.Error(err))
		return // /undo of this turn then rewinds the conversation only, and says so
	}
	w.mu.Lock()
	w.pending[t.l.key] = id
	w.mu.Unlock()
}

// saveSnapshot names the snapshot after the turn codex started, at once,
// so a crash during the turn still leaves it for /undo.
func (w *worktrees) saveSnapshot(ctx context.Context, t *turn) {
	w.mu.Lock()
	id, ok := w.pending[t.l.key]
	delete(w.pending, t.l.key)
	w.mu.Unlock()
	tree, here := w.treeAt(t.dir)
	if !ok || !here {
		return
	}
	if err := worktree.Save(ctx, tree, t.turnID, id); err != nil {
		w.log.Warn("worktree.snapshot_save_failed", zap.String("lane", t.l.key), zap.Error(err))
		return
	}
	if _, err := worktree.Prune(ctx, tree, keepSnapshots); err != nil {
		w.log.Warn("worktree.snapshot_prune_failed", zap.String("lane", t.l.key), zap.Error(err))
	}
}

// explain is the lane's worktree of its project as it is on disk now,
// made if it is missing, for the commands that work on it (/diff, /undo);
// without one, the words saying why.
func (w *worktrees) explain(ctx context.Context, l *lane, sl store.Lane) (worktree.Tree, string, bool) {
	if !w.on() {
		return worktree.Tree{}, "Worktrees are off (lanes.worktrees: false): this conversation has no git worktree of its own.", false
	}
	name, dir := w.projects.chosen(sl)
	if name == "" {
		return worktree.Tree{}, "This conversation has no project: choose one that is a git repository with /project, and it gets a git worktree of its own.", false
	}
	tree, err := w.ensure(ctx, sl.SessionKey, l, w.laneOf(sl.SessionKey, name, dir))
	switch {
	case errors.Is(err, worktree.ErrNotRepo):
		return worktree.Tree{}, fmt.Sprintf("Project %s is not a git repository, so this conversation has no git worktree of its own.", name), false
	case err != nil:
		w.log.Warn("worktree.failed", zap.String("lane", sl.SessionKey), zap.String("project", name), zap.Error(err))
		return worktree.Tree{}, "Could not open this conversation's git worktree: " + briefError(err), false
	}
	return tree, "", true
}

// fork gives the lane childKey a worktree of the parent's project started
// from the parent's files as they are now (/fork); without one (the
// parent has no worktree, or it could not be made) the words saying why.
func (w *worktrees) fork(ctx context.Context, l *lane, parent store.Lane, childKey string) (worktree.Tree, string, bool) {
	ptree, why, ok := w.explain(ctx, l, parent)
	if !ok {
		return worktree.Tree{}, why, false
	}
	name, dir := w.projects.chosen(parent)
	tree, err := w.pool.Fork(ctx, ptree, w.laneOf(childKey, name, dir))
	if err != nil {
		w.log.Warn("worktree.fork_failed", zap.String("lane", l.key), zap.String("child", childKey), zap.Error(err))
		return worktree.Tree{}, "Could not copy this conversation's worktree: " + briefError(err), false
	}
	w.mu.Lock()
	w.trees[tree.Dir] = tree
	w.mu.Unlock()
	return tree, "", true
}

// dirOf is where a stored lane works, for loading its thread outside a
// turn (after a restart the worktree is not in memory yet): its worktree
// when its project is a git repository, else the project's choice.
func (w *worktrees) dirOf(sl store.Lane) string {
	name, dir := w.projects.chosen(sl)
	if !w.on() || name == "" {
		return w.projects.dirOf(sl)
	}
	ctx, cancel := context.WithTimeout(context.Background(), gitTimeout)
	defer cancel()
	tree, err := w.ensure(ctx, sl.SessionKey, nil, w.laneOf(sl.SessionKey, name, dir))
	if err != nil {
		if !errors.Is(err, worktree.ErrNotRepo) {
			w.log.Warn("worktree.failed", zap.String("lane", sl.SessionKey), zap.String("project", name), zap.Error(err))
		}
		return w.projects.dirOf(sl)
	}
	return tree.Work
}

// status is the /status line of the lane's worktree.
func (w *worktrees) status(sl store.Lane) string {
	name, dir := w.projects.chosen(sl)
	if name == "" {
		return ""
	}
	wl := w.laneOf(sl.SessionKey, name, dir)
	if !worktree.IsRepo(dir) {
		return fmt.Sprintf("Worktree: none, project %s is not a git repository (this conversation works in its checkout)\n", name)
	}
	if !worktree.Present(worktree.Tree{Lane: wl}) {
		return fmt.Sprintf("Worktree: made at the next turn in %s, on branch %s\n", wl.Dir, wl.Branch())
	}
	return fmt.Sprintf("Worktree: %s on branch %s\n", wl.Dir, wl.Branch())
}

// short is a commit id as people quote it.
func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
