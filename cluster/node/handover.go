package node

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/store"
)

// A lane's rollout travels with its commits: its owner ships the rollout
// after each commit (TurnCommitted, off the turn's path), and whoever
// moves the lane makes sure the rollout the next owner restores covers
// the lane's last committed turn. A live owner ships before it lets a lane
// go and keeps the lane while what it shipped does not cover that turn
// yet (release, leave); a node taking a lane over restores the committed
// turns the shipped rollout lacks, which only a dead or cut-off owner
// leaves behind, from its own copy or the transcript (restore).

// maxHandOverDeferrals bounds the rounds a live owner keeps an idle lane
// placed elsewhere because its shipped rollout does not cover the last
// committed turn (codex has not written the turn's end yet): past them it
// hands the lane over anyway, and the next owner rebuilds the turn from
// the transcript, so a rollout that never shows a turn's end cannot pin
// a lane to this node.
const maxHandOverDeferrals = 4

// rebuildTurns is how many of a lane's last committed turns a takeover
// checks the restored rollout for: more than an owner that dies between
// commits and ships leaves unshipped.
const rebuildTurns = 8

// shipForHandOver ships the lane's rollout under lease l so that it covers
// the lane's last committed turn on its thread (cluster.ErrTurnNotShipped
// when it does not yet). A lane without a thread, or whose rollout this
// node does not have (it was never restored here), has nothing to ship.
func (c *Coordinator) shipForHandOver(ctx context.Context, key string, l cluster.Lease) error {
	sl, err := c.st.Lane(ctx, key)
	if errors.Is(err, store.ErrNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if sl.ThreadID == "" || sl.Binding == store.BindingLost {
		return nil
	}
	turns, err := c.st.ThreadTurns(ctx, key, sl.ThreadID, 1)
	if err != nil {
		return err
	}
	last := ""
	if len(turns) > 0 {
		last = turns[0].TurnID
	}
	res, err := c.rollouts.ShipCovering(ctx, c.codexHome, sl.ThreadID, last, l)
	if errors.Is(err, cluster.ErrNoRollout) {
		return nil
	}
	if err != nil {
		return err
	}
	if res.Bytes > 0 {
		c.log.Info("cluster.shipped", zap.String("lane", key), zap.String("thread", sl.ThreadID),
			zap.Int64("bytes", res.Bytes), zap.String("for", "hand-over"))
	}
	return nil
}

// handOverShipped ships the lane's rollout before a hand-over and reports
// whether the lane may go now: when it is shipped through the last
// committed turn, or after maxHandOverDeferrals rounds that could not
// ship it. A lease refused by the fence is stepped down from instead.
func (c *Coordinator) handOverShipped(ctx context.Context, key string, l cluster.Lease) bool {
	err := c.shipForHandOver(ctx, key, l)
	c.mu.Lock()
	tries := c.handOverTries[key] + 1
	if err == nil || tries > maxHandOverDeferrals {
		delete(c.handOverTries, key)
	} else {
		c.handOverTries[key] = tries
	}
	c.mu.Unlock()
	lane := zap.String("lane", key)
	switch {
	case err == nil:
		return true
	case errors.Is(err, cluster.ErrFenced):
		c.log.Warn("cluster.ship_failed", lane, zap.Error(err))
		c.stepDown(key, "ship refused by the fence")
		return false
	case tries > maxHandOverDeferrals:
		c.log.Warn("cluster.handover_unshipped", lane, zap.Int("rounds", tries), zap.Error(err))
		return true
	default:
		c.log.Info("cluster.handover_deferred", lane, zap.Int("round", tries), zap.Error(err))
		return false
	}
}

// shipBeforeLeaving ships every lane's rollout once before the node leaves
// (the gateway has drained, so the files are final): a lane whose ship
// fails is restored from the transcript by its next owner.
func (c *Coordinator) shipBeforeLeaving() {
	if c.st == nil {
		return
	}
	c.mu.Lock()
	held := make(map[string]cluster.Lease, len(c.owned))
	for key, h := range c.owned {
		held[key] = h.lease
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), clusterCallTO)
	defer cancel()
	for key, l := range held {
		mu := c.laneLock(key)
		mu.Lock()
		err := c.shipForHandOver(ctx, key, l)
		mu.Unlock()
		if err != nil {
			c.log.Warn("cluster.leave_ship_failed", zap.String("lane", key), zap.Error(err))
		}
	}
}

// committedTurns are the lane's last committed turns on threadID, newest
// first, as the restored rollout must hold them.
func (c *Coordinator) committedTurns(ctx context.Context, key, threadID string) ([]cluster.CommittedTurn, error) {
	turns, err := c.st.ThreadTurns(ctx, key, threadID, rebuildTurns)
	if err != nil {
		return nil, err
	}
	out := make([]cluster.CommittedTurn, len(turns))
	for i, t := range turns {
		out[i] = cluster.CommittedTurn{TurnID: t.TurnID, User: t.User, Assistant: t.Assistant}
	}
	return out, nil
}
