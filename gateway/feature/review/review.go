// Package review is /review [base BRANCH | commit SHA]: codex's reviewer
// (review/start, delivered inline) on the lane's thread.
package review

import (
	"context"
	"strings"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// A review runs as a turn, in the lane's order, with the work view and the
// reply like any other; only the call that starts it differs. With no
// argument it reviews the uncommitted changes of the lane's working
// directory (its worktree: codex's sandbox does not commit there, so that
// is everything the lane changed); "base main" the changes since a branch;
// "commit SHA" what one commit introduced.

const usage = "Usage: /review (the uncommitted changes), /review base BRANCH (the changes since a branch) or /review commit SHA (one commit)."

// Review is the /review command.
type Review struct {
	host ext.Host
}

// New is the /review command.
func New() *Review { return &Review{} }

// Name is the feature's name.
func (r *Review) Name() string { return "review" }

// Register adds /review.
func (r *Review) Register(h ext.Host) error {
	r.host = h
	h.Command(ext.Command{Name: "review", Args: "[base BRANCH|commit SHA]",
		Description: "Have Codex review this conversation's changes", Menu: true, Run: r.run})
	return nil
}

func (r *Review) run(ctx context.Context, c ext.Call) bool {
	target, ok := parseTarget(c.Args)
	if !ok {
		r.host.Notify(ctx, c.Lane.Address(), c.MsgID, usage)
		return true
	}
	c.QueueTurn(ctx, strings.TrimSpace("/review "+c.Args), &target)
	return false // the turn closes the inbound row
}

// parseTarget reads /review's arguments.
func parseTarget(args string) (codex.ReviewTarget, bool) {
	fields := strings.Fields(args)
	switch {
	case len(fields) == 0:
		return codex.ReviewTarget{Kind: codex.ReviewUncommitted}, true
	case len(fields) == 2 && strings.EqualFold(fields[0], "base"):
		return codex.ReviewTarget{Kind: codex.ReviewBaseBranch, Branch: fields[1]}, true
	case len(fields) == 2 && strings.EqualFold(fields[0], "commit"):
		return codex.ReviewTarget{Kind: codex.ReviewCommit, SHA: fields[1]}, true
	}
	return codex.ReviewTarget{}, false
}
