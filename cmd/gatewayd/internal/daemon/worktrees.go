package daemon

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/worktree"
)

// Worktree retention (lanes.worktree_retention): a lane's
// worktree, its repository with its snapshots, and the branch the
// project's repository keeps for it are removed once the lane is gone
// from the store or has been idle for the retention; the daemon does it
// at start and every day, `gatewayd worktrees prune` at once.

// pruneEvery is how often the running daemon prunes.
const pruneEvery = 24 * time.Hour

// LaneLister is what pruning needs of the store: every lane with its last
// activity.
type LaneLister interface {
	Lanes(ctx context.Context, limit int) ([]store.Lane, error)
}

var _ LaneLister = (*store.Store)(nil)

// PruneWorktrees removes the worktrees kept past the retention and
// returns their directories. A worktree of a lane the store does not know
// (forgotten, or reset for good) counts as idle since its directory last
// changed. Nothing is removed with worktrees off or the retention 0.
func PruneWorktrees(ctx context.Context, cfg *config.Config, st LaneLister, now time.Time) ([]string, error) {
	if !cfg.Lanes.Worktrees || cfg.Lanes.WorktreeRetention <= 0 {
		return nil, nil
	}
	found, err := worktree.List(cfg.WorktreesDir())
	if err != nil || len(found) == 0 {
		return nil, err
	}
	lanes, err := st.Lanes(ctx, 0)
	if err != nil {
		return nil, fmt.Errorf("worktrees: %w", err)
	}
	lastActive := make(map[string]time.Time, len(lanes))
	for _, l := range lanes {
		lastActive[files.DirName(l.SessionKey)] = l.LastActiveAt
	}
	projects := make(map[string]string, len(cfg.Projects))
	for name, dir := range cfg.Projects {
		projects[files.DirName(name)] = dir
	}
	cutoff := now.Add(-cfg.Lanes.WorktreeRetention)
	var removed []string
	for _, f := range found {
		if !f.Own || !idleSince(f, lastActive).Before(cutoff) {
			continue
		}
		l := worktree.Lane{Project: projects[f.ProjectDir], Dir: f.Dir, Slug: f.Slug}
		if err := worktree.Remove(ctx, l); err != nil {
			return removed, err
		}
		removed = append(removed, f.Dir)
	}
	return removed, nil
}

// idleSince is when the worktree's lane was last active: from the store,
// else the worktree's own modification time.
func idleSince(f worktree.Found, lastActive map[string]time.Time) time.Time {
	if t, ok := lastActive[f.Slug]; ok {
		return t
	}
	return worktree.ModTime(f.Dir)
}

// pruneWorktreesDaily prunes at start and then every pruneEvery until ctx
// ends, logging what went.
func pruneWorktreesDaily(ctx context.Context, cfg *config.Config, st LaneLister, log *zap.Logger) {
	if !cfg.Lanes.Worktrees || cfg.Lanes.WorktreeRetention <= 0 {
		return
	}
	tick := time.NewTicker(pruneEvery)
	defer tick.Stop()
	for {
		removed, err := PruneWorktrees(ctx, cfg, st, time.Now())
		if err != nil {
			log.Warn("worktrees.prune_failed", zap.Error(err))
		}
		if len(removed) > 0 {
			log.Info("worktrees.pruned", zap.Strings("dirs", removed), zap.Duration("retention", cfg.Lanes.WorktreeRetention))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// poolEvery is how often the pool looks whether a project's HEAD moved
// (one rev-parse per project), beside the fills a take asks for.
const poolEvery = time.Minute

// worktreePool is the pool of ready worktrees (worktrees.pool),
// nil with worktrees or the pool off. Its entries live under the
// worktrees' root, on the lanes' filesystem, so taking one is a rename.
func worktreePool(cfg *config.Config) *worktree.Pool {
	if !cfg.Lanes.Worktrees {
		return nil
	}
	return worktree.NewPool(cfg.WorktreesDir(), cfg.Worktrees.Pool)
}

// fillPool keeps the pool of every configured project full until ctx
// ends (shutdown), logging a project whose entries cannot be made.
func fillPool(ctx context.Context, pool *worktree.Pool, cfg *config.Config, log *zap.Logger) {
	projects := make(map[string]string, len(cfg.Projects))
	for name, dir := range cfg.Projects {
		projects[files.DirName(name)] = dir
	}
	pool.Run(ctx, projects, poolEvery, func(projectDir string, err error) {
		log.Warn("worktrees.pool_failed", zap.String("project_dir", projectDir), zap.Error(err))
	})
}
