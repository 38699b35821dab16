package gateway

import (
	"context"
	"errors"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/worktree"
)

// The core's side of ext.PlaceHooks: where lanes work is a feature's
// (the projects feature); the core asks the one registered, and without
// one every lane works in its default directory.

// noPlaces is what a lane hears asking for its worktree when no feature
// places lanes.
const noPlaces = "This gateway offers no projects: this conversation has no git worktree of its own."

// places is the registered ext.Places, or the default directories.
type places struct {
	p ext.Places // nil: none registered
	// fallback is the directory of a lane without a project: codex.cwd,
	// or with isolated lanes the lane's own directory under it.
	fallback func(sessionKey string) string
}

// extPlaceHooks is a feature's host's ext.PlaceHooks: where lanes work.
type extPlaceHooks struct{ *extCore }

var _ ext.PlaceHooks = extPlaceHooks{}

func newPlaces(cfg Config) *places {
	root := cfg.Thread.Cwd
	fallback := func(string) string { return root }
	if cfg.Isolation.on() {
		// Each lane its own directory, so two lanes never share files.
		fallback = func(sessionKey string) string { return files.WorkDir(root, sessionKey) }
	}
	return &places{fallback: fallback}
}

func (p *places) projectDir(sl store.Lane) string {
	if p.p == nil {
		return p.fallback(sl.SessionKey)
	}
	return p.p.ProjectDir(sl)
}

// workDir is where a stored lane works, for loading its thread outside a
// turn.
func (p *places) workDir(sl store.Lane) string {
	if p.p == nil {
		return p.fallback(sl.SessionKey)
	}
	return p.p.WorkDir(sl)
}

// describe names the lane's project for /new's notice.
func (p *places) describe(sl store.Lane) string {
	if p.p == nil {
		return sl.Project
	}
	return p.p.Describe(sl)
}

func (e extPlaceHooks) ProvidePlaces(p ext.Places) error {
	if e.places.p != nil {
		return errors.New("gateway: a second feature places lanes (ProvidePlaces)")
	}
	e.places.p = p
	return nil
}

func (e extPlaceHooks) DefaultDir(sessionKey string) string { return e.places.fallback(sessionKey) }

func (e extPlaceHooks) OnStarted(fn func(ctx context.Context, t ext.Turn)) {
	e.h.hooks.started = append(e.h.hooks.started, func(ctx context.Context, t *turn) { fn(ctx, e.turn(t)) })
}

func (x extLane) Worktree(ctx context.Context, sl store.Lane) (worktree.Tree, string, bool) {
	if p := x.core.places.p; p != nil {
		return p.Worktree(ctx, x, sl)
	}
	return worktree.Tree{}, noPlaces, false
}

func (x extLane) ForkWorktree(ctx context.Context, parent store.Lane, childKey string) (worktree.Tree, string, bool) {
	if p := x.core.places.p; p != nil {
		return p.ForkWorktree(ctx, x, parent, childKey)
	}
	return worktree.Tree{}, noPlaces, false
}

func (x extTurn) SetDir(dir string)    { x.t.dir = dir }
func (x extTurn) Refuse(reason string) { x.t.refusal = reason }
func (x extTurn) ID() string           { return x.t.turnID }
