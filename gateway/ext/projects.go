package ext

import (
	"context"

	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/worktree"
)

// PlaceHooks are what a feature that decides where lanes work (the
// projects feature: a configured project directory per lane, a git
// worktree of it) registers and uses. The core keeps answering
// Host.ProjectDir, Host.WorkDir, Lane.Worktree and Lane.ForkWorktree for
// the features that ask, through the one Places registered.
type PlaceHooks interface {
	// ProvidePlaces makes p where stored lanes work: the thread loaded
	// outside a turn, Host.ProjectDir and Host.WorkDir, Lane.Worktree and
	// Lane.ForkWorktree ask it. One feature provides it; a second is an
	// error. Without one every lane works in DefaultDir and has no
	// worktree.
	ProvidePlaces(p Places) error
	// DefaultDir is the directory of a lane without a project: codex.cwd,
	// or with isolated lanes the lane's own directory under it.
	DefaultDir(sessionKey string) string
	// OnStarted runs when codex has started the turn (TurnPlace.ID is
	// known), before its first event is handled.
	OnStarted(fn func(ctx context.Context, t Turn))
}

// Places answers where a stored lane works, outside its turns.
type Places interface {
	// ProjectDir is the directory of the lane's project: its checkout,
	// or DefaultDir for a lane without one.
	ProjectDir(sl store.Lane) string
	// WorkDir is where the lane works: its worktree when it has one,
	// else ProjectDir.
	WorkDir(sl store.Lane) string
	// Describe names the lane's project and its directory, for the
	// notice of /new.
	Describe(sl store.Lane) string
	// Worktree and ForkWorktree answer Lane.Worktree and
	// Lane.ForkWorktree for the lane l.
	Worktree(ctx context.Context, l Lane, sl store.Lane) (tree worktree.Tree, why string, ok bool)
	ForkWorktree(ctx context.Context, l Lane, parent store.Lane, childKey string) (tree worktree.Tree, why string, ok bool)
}

// TurnPlace is what a turn lets the feature that places it do.
type TurnPlace interface {
	// SetDir moves the turn's working directory (in OnPrepare).
	SetDir(dir string)
	// Refuse fails the turn, before its thread loads, with reason as the
	// lane's notice (in OnPrepare).
	Refuse(reason string)
	// ID is codex's id of the turn, once it started ("" before).
	ID() string
}
