// Package projects is /project and the lanes' git worktrees: where a lane
// works. A lane works in one of the configured project directories or in
// its default one; on a git project, in a git worktree of its own
// (lanes.worktrees), snapshotted before each turn for /undo.
//
// Worktrees live here, not in a feature of their own: a worktree is of a
// lane's chosen project, made when the lane picks it and derived from it
// at every turn, so splitting them would only publish the project choice
// through the extension API for its one reader. The package provides the
// core's ext.Places: the core keeps answering ext.Lane.Worktree and
// Host.WorkDir (for /diff, /undo, /fork, /handoff) by asking it.
package projects

import (
	"context"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/worktree"
)

// Settings are the feature's configuration.
type Settings struct {
	// Projects maps a project name to its directory (projects): the
	// working directories a lane may choose with /project. The names are
	// checked by config.
	Projects map[string]string
	// Pool, when set, holds ready worktrees of each project
	// (worktrees.pool), which a lane's first turn and /fork take instead
	// of checking one out; the daemon keeps it filled.
	Pool *worktree.Pool
}

// Store is the part of the store /project uses.
type Store interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	EnsureLane(ctx context.Context, k store.LaneKey) (store.Lane, error)
	SetProject(ctx context.Context, sessionKey, name string) error
	ForgetProject(ctx context.Context, sessionKey, name string) (bool, error)
}

var _ Store = (*store.Store)(nil)

// Feature is /project and the worktrees.
type Feature struct {
	s  Settings
	st Store

	projects  *projects
	worktrees *worktrees
}

// New is the feature over st.
func New(s Settings, st Store) *Feature { return &Feature{s: s, st: st} }

// Name is the feature's name.
func (f *Feature) Name() string { return "projects" }

// Register adds /project, the worktrees' hooks, and the feature as where
// lanes work. The projects' hooks go first: the worktrees move a turn into
// the worktree of the project they chose.
func (f *Feature) Register(h ext.Host) error {
	f.projects = newProjects(f.s.Projects, f.st, h)
	f.worktrees = newWorktrees(f.projects, f.s.Pool, h)
	f.projects.picked = f.worktrees.prepareSoon
	f.projects.register(h)
	f.worktrees.register(h)
	return h.ProvidePlaces(f)
}

// ProjectDir is the directory of the lane's project, without side
// effects.
func (f *Feature) ProjectDir(sl store.Lane) string { return f.projects.dirOf(sl) }

// WorkDir is where the lane works: its worktree, made if need be, else
// ProjectDir.
func (f *Feature) WorkDir(sl store.Lane) string { return f.worktrees.dirOf(sl) }

// Describe names the lane's project and its directory.
func (f *Feature) Describe(sl store.Lane) string { return f.projects.describe(sl) }

// Worktree is the lane's worktree as it is on disk now, made if missing.
func (f *Feature) Worktree(ctx context.Context, l ext.Lane, sl store.Lane) (worktree.Tree, string, bool) {
	return f.worktrees.explain(ctx, l, sl)
}

// ForkWorktree gives the lane childKey a worktree from the parent's files.
func (f *Feature) ForkWorktree(ctx context.Context, l ext.Lane, parent store.Lane, childKey string) (worktree.Tree, string, bool) {
	return f.worktrees.fork(ctx, l, parent, childKey)
}
