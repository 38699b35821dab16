// Package undo is /undo: it takes back the lane's last turn, from Codex's
// history and from the lane's worktree.
package undo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/worktree"
)

// Codex's history loses the turn (thread/revert, which rewrites the
// rollout, so a restart does not bring it back) and the lane's worktree
// gets its files back from the snapshot taken before that turn. /undo
// again goes one turn further back, as far as the snapshots kept. A lane
// without a worktree has its conversation rewound and is told its files
// were not.
//
// History goes first: if codex refuses, nothing changed. A restore that
// fails after it is said in so many words, with the snapshot to restore
// by hand.

// Store is the part of the store /undo uses.
type Store interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
}

var _ Store = (*store.Store)(nil)

// Runtime is what /undo uses of codex.
type Runtime interface {
	Turns(ctx context.Context, threadID string) ([]codex.TurnSummary, error)
	RevertThread(ctx context.Context, threadID, beforeTurnID string) error
}

var _ Runtime = (*codex.Client)(nil)

// Undo is the /undo command.
type Undo struct {
	st   Store
	cx   Runtime
	host ext.Host
	log  *zap.Logger
}

// New is /undo over st and cx.
func New(st Store, cx Runtime) *Undo { return &Undo{st: st, cx: cx} }

// Name is the feature's name.
func (u *Undo) Name() string { return "undo" }

// Register adds /undo.
func (u *Undo) Register(h ext.Host) error {
	u.host, u.log = h, h.Logger()
	h.Command(ext.Command{Name: "undo", Description: "Undo the last turn: its files and Codex's memory of it", Menu: true,
		Run: func(ctx context.Context, c ext.Call) bool {
			return ext.BetweenTurns(ctx, h, c, func(ctx context.Context) {
				h.Notify(ctx, c.Lane.Address(), c.MsgID, u.undo(ctx, c.Lane))
			})
		}})
	return nil
}

// undo does the work, in the lane's order, and returns what to tell the lane.
func (u *Undo) undo(ctx context.Context, l ext.Lane) string {
	thread, err := l.LoadThread(ctx)
	if errors.Is(err, ext.ErrNoThread) {
		return "Nothing to undo: this conversation has no Codex thread yet."
	}
	if err != nil {
		u.log.Warn("undo.load_failed", zap.String("lane", l.Key()), zap.Error(err))
		return "Could not undo: the Codex thread could not be opened (" + ext.BriefError(err) + ")."
	}
	last, ok, err := u.lastTurn(ctx, thread)
	if err != nil {
		u.log.Warn("undo.turns_failed", zap.String("lane", l.Key()), zap.Error(err))
		return "Could not undo: Codex did not list the thread's turns (" + ext.BriefError(err) + ")."
	}
	if !ok {
		return "Nothing to undo: this conversation's Codex thread has no turns left."
	}
	if err := u.cx.RevertThread(ctx, thread, last.ID); err != nil {
		u.log.Warn("undo.revert_failed", zap.String("lane", l.Key()), zap.String("turn", last.ID), zap.Error(err))
		return "Could not undo: Codex refused to rewind the thread (" + ext.BriefError(err) + "). Nothing was changed."
	}
	u.log.Info("undo.reverted", zap.String("lane", l.Key()), zap.String("thread", thread), zap.String("turn", last.ID))
	return fmt.Sprintf("Undid the last turn (%q): Codex's history no longer has it, and %s /undo again goes one turn further back.",
		ext.QuoteStart(last.UserText, 60), u.restore(ctx, l, last.ID))
}

// lastTurn is the thread's newest turn that began with a message; a turn
// without one after it (a compaction) goes with it. ok is false when the
// thread has no turns.
func (u *Undo) lastTurn(ctx context.Context, thread string) (codex.TurnSummary, bool, error) {
	turns, err := u.cx.Turns(ctx, thread)
	if err != nil || len(turns) == 0 {
		return codex.TurnSummary{}, false, err
	}
	for i := len(turns) - 1; i >= 0; i-- {
		if turns[i].UserText != "" {
			return turns[i], true, nil
		}
	}
	return turns[len(turns)-1], true, nil
}

// restore puts the lane's worktree back as it was before turnID and says
// what became of the files, as the end of a sentence.
func (u *Undo) restore(ctx context.Context, l ext.Lane, turnID string) string {
	sl, err := u.st.Lane(ctx, l.Key())
	if err != nil {
		return "its files were not restored (this conversation could not be read: " + ext.BriefError(err) + ")."
	}
	tree, why, ok := l.Worktree(ctx, sl)
	if !ok {
		return "its files were not restored: " + lowerFirst(strings.TrimSuffix(why, ".")) + "."
	}
	snap, found, err := worktree.Saved(ctx, tree, turnID)
	switch {
	case err != nil:
		return "its files were not restored (the snapshot could not be read: " + ext.BriefError(err) + ")."
	case !found:
		return "its files were not restored: no snapshot of the worktree was kept from before that turn."
	}
	if err := worktree.Restore(ctx, tree, snap); err != nil {
		u.log.Error("undo.restore_failed", zap.String("lane", l.Key()), zap.String("snapshot", snap), zap.Error(err))
		return fmt.Sprintf("its files could NOT be restored (%s); the snapshot from before it is commit %s in %s.", ext.BriefError(err), snap, tree.Dir)
	}
	if err := worktree.Drop(ctx, tree, turnID); err != nil {
		u.log.Warn("undo.drop_failed", zap.String("lane", l.Key()), zap.Error(err))
	}
	return "the files in " + tree.Dir + " are back as they were before it."
}

// lowerFirst lowers a sentence's first letter, to continue it after a colon.
func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return strings.ToLower(string(r)) + s[n:]
}
