package gateway

import (
	"context"
	"strings"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// /review [base BRANCH | commit SHA]: codex's reviewer
// (review/start, delivered inline) on the lane's thread. It runs as a
// turn, in the lane's order, with the work view and the reply like any
// other; only the call that starts it differs. With no argument it
// reviews the uncommitted changes of the lane's working directory (its
// worktree: codex's sandbox does not commit there, so that is everything
// the lane changed); "base main" the changes since a branch; "commit
// SHA" what one commit introduced.

const reviewUsage = "Usage: /review (the uncommitted changes), /review base BRANCH (the changes since a branch) or /review commit SHA (one commit)."

type reviews struct {
	sched *scheduler
	out   *deliverer
}

func (r *reviews) register(h *host) {
	h.command("review", func(ctx context.Context, c commandCall) bool {
		target, ok := parseReviewTarget(c.args)
		if !ok {
			r.out.notify(ctx, c.lane.addr, c.msgID, reviewUsage)
			return true
		}
		r.sched.enqueue(ctx, c.lane, item{kind: itemTurn, inboundID: c.inboundID, msgID: c.msgID,
			text: strings.TrimSpace("/review " + c.args), review: &target, requester: c.sender, requesterName: c.senderName})
		return false // the turn closes the inbound row
	})
}

// parseReviewTarget reads /review's arguments.
func parseReviewTarget(args string) (codex.ReviewTarget, bool) {
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
