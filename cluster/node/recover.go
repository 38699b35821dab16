package node

import (
	"context"
	"slices"

	"go.uber.org/zap"
)

// recoverPending runs the lane's takeover recovery (its cut-off turn told,
// its unfinished rows run again in order) if it has not succeeded yet, and
// reports whether the lane is recovered. A recovery that fails (the
// database away) is retried every round while this node holds the lease,
// however long the outage: before, it was logged and the lane's rows
// waited for its next takeover or the next start. Until it succeeds no new
// row of the lane is claimed, so none runs before the unfinished ones. The
// caller holds the lane's lock.
func (c *Coordinator) recoverPending(ctx context.Context, key string) bool {
	c.mu.Lock()
	pending := c.unrecovered[key]
	c.mu.Unlock()
	if !pending {
		return true
	}
	if err := c.gw.RecoverLane(ctx, key); err != nil {
		c.log.Warn("cluster.recover_failed", zap.String("lane", key), zap.Bool("retry", true), zap.Error(err))
		return false
	}
	c.mu.Lock()
	delete(c.unrecovered, key)
	c.mu.Unlock()
	return true
}

// retryRecoveries retries the recovery of the lanes taken whose recovery
// failed and that round did not serve (a lane whose only rows are the
// unfinished ones is not among the lanes with new work).
func (c *Coordinator) retryRecoveries(ctx context.Context, served []string) {
	c.mu.Lock()
	var keys []string
	for key := range c.unrecovered {
		if !slices.Contains(served, key) {
			keys = append(keys, key)
		}
	}
	c.mu.Unlock()
	for _, key := range keys {
		if ctx.Err() != nil {
			return
		}
		mu := c.laneLock(key)
		mu.Lock()
		if c.Serves(key) {
			c.recoverPending(ctx, key)
		}
		mu.Unlock()
	}
}
