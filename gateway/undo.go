package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/worktree"
)

// /undo takes back the lane's last turn: Codex's history loses
// it (thread/revert, which rewrites the rollout, so a restart does not
// bring it back) and the lane's worktree gets its files back from the
// snapshot taken before that turn. /undo again goes one turn further back,
// as far as the snapshots kept (keepSnapshots). A lane without a worktree
// has its conversation rewound and is told its files were not.
//
// History goes first: if codex refuses, nothing changed. A restore that
// fails after it is said in so many words, with the snapshot to restore
// by hand.

type undoing struct {
	st interface {
		Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	}
	cx     undoRuntime
	loader *threadLoader
	wt     *worktrees
	sched  *scheduler
	out    *deliverer
	inbox  inbox
	log    *zap.Logger
}

// undoRuntime is what /undo uses of codex.
type undoRuntime interface {
	Turns(ctx context.Context, threadID string) ([]codex.TurnSummary, error)
	RevertThread(ctx context.Context, threadID, beforeTurnID string) error
}

var _ undoRuntime = (*codex.Client)(nil)

func (u *undoing) register(h *host) {
	h.command("undo", func(ctx context.Context, c commandCall) bool {
		return betweenTurns(ctx, c, u.sched, u.out, u.run)
	})
}

// run undoes the lane's last turn, in the lane's order.
func (u *undoing) run(ctx context.Context, l *lane, it item) {
	defer u.inbox.set(ctx, it.inboundID, store.InboundDone)
	u.out.notify(ctx, l.addr, it.msgID, u.undo(ctx, l))
}

// undo does the work and returns what to tell the lane.
func (u *undoing) undo(ctx context.Context, l *lane) string {
	thread, err := u.loader.load(ctx, l)
	if errors.Is(err, ErrNoThread) {
		return "Nothing to undo: this conversation has no Codex thread yet."
	}
	if err != nil {
		u.log.Warn("undo.load_failed", zap.String("lane", l.key), zap.Error(err))
		return "Could not undo: the Codex thread could not be opened (" + briefError(err) + ")."
	}
	last, ok, err := u.lastTurn(ctx, thread)
	if err != nil {
		u.log.Warn("undo.turns_failed", zap.String("lane", l.key), zap.Error(err))
		return "Could not undo: Codex did not list the thread's turns (" + briefError(err) + ")."
	}
	if !ok {
		return "Nothing to undo: this conversation's Codex thread has no turns left."
	}
	if err := u.cx.RevertThread(ctx, thread, last.ID); err != nil {
		u.log.Warn("undo.revert_failed", zap.String("lane", l.key), zap.String("turn", last.ID), zap.Error(err))
		return "Could not undo: Codex refused to rewind the thread (" + briefError(err) + "). Nothing was changed."
	}
	u.log.Info("undo.reverted", zap.String("lane", l.key), zap.String("thread", thread), zap.String("turn", last.ID))
	return fmt.Sprintf("Undid the last turn (%q): Codex's history no longer has it, and %s /undo again goes one turn further back.",
		quoteStart(last.UserText), u.restore(ctx, l, last.ID))
}

// lastTurn is the thread's newest turn that began with a message; a turn
// without one after it (a compaction) goes with it. ok is false when the
// thread has no turns.
func (u *undoing) lastTurn(ctx context.Context, thread string) (codex.TurnSummary, bool, error) {
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
func (u *undoing) restore(ctx context.Context, l *lane, turnID string) string {
	sl, err := u.st.Lane(ctx, l.key)
	if err != nil {
		return "its files were not restored (this conversation could not be read: " + briefError(err) + ")."
	}
	tree, why, ok := u.wt.explain(ctx, l, sl)
	if !ok {
		return "its files were not restored: " + lowerFirst(strings.TrimSuffix(why, ".")) + "."
	}
	snap, found, err := worktree.Saved(ctx, tree, turnID)
	switch {
	case err != nil:
		return "its files were not restored (the snapshot could not be read: " + briefError(err) + ")."
	case !found:
		return "its files were not restored: no snapshot of the worktree was kept from before that turn."
	}
	if err := worktree.Restore(ctx, tree, snap); err != nil {
		u.log.Error("undo.restore_failed", zap.String("lane", l.key), zap.String("snapshot", snap), zap.Error(err))
		return fmt.Sprintf("its files could NOT be restored (%s); the snapshot from before it is commit %s in %s.", briefError(err), snap, tree.Dir)
	}
	if err := worktree.Drop(ctx, tree, turnID); err != nil {
		u.log.Warn("undo.drop_failed", zap.String("lane", l.key), zap.Error(err))
	}
	return "the files in " + tree.Dir + " are back as they were before it."
}

// quoteStart is the start of a message, for naming the turn it began.
func quoteStart(text string) string { return quoteStartN(text, 60) }

// quoteStartN is text on one line, cut to max characters.
func quoteStartN(text string, max int) string {
	text = strings.Join(strings.Fields(text), " ")
	if text == "" {
		return "no text"
	}
	if utf8.RuneCountInString(text) <= max {
		return text
	}
	r := []rune(text)
	return string(r[:max]) + "…"
}

// lowerFirst lowers a sentence's first letter, to continue it after a colon.
func lowerFirst(s string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	return strings.ToLower(string(r)) + s[n:]
}
