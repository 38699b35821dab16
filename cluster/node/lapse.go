package node

import (
	"strings"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/cluster"
)

// A lane lease the keeper could not renew for a whole TTL (the database
// out of reach, or frozen) lapses instead of being dropped. Another node
// may hold it by now, so the lane is not served (no sends, no claims), but
// its running turn, its queued messages and the writes it has under way
// stay, and the keeper goes on renewing the same lease. A renewal succeeds
// only if no one took the lease meanwhile (any takeover changes the
// token), and then the lane goes on where it was, every write it queued
// still carrying the current token: nothing is cut off or sent again. If
// someone did take it, the renewal is refused and the lane steps down as
// for any lost lease (leaseLost).

// leaseLapsed is the keeper's OnLapse. The poller and the Discord shards
// have no work to keep and are given up as before.
func (c *Coordinator) leaseLapsed(l cluster.Lease, err error) {
	key, lane := strings.CutPrefix(l.Name, cluster.LanePrefix)
	if !lane {
		c.keeper.Drop(l.Name)
		c.leaseLost(l, err)
		return
	}
	c.mu.Lock()
	h, ok := c.owned[key]
	if ok && h.lease == l {
		h.lapsed = true
		c.owned[key] = h
	}
	c.mu.Unlock()
	if !ok || h.lease != l {
		c.keeper.Drop(l.Name) // not this lane's lease any more
		return
	}
	c.log.Warn("cluster.lease_lost", zap.String("lease", l.Name), zap.Int64("token", l.Token),
		zap.Bool("renewing", true), zap.Error(err))
}

// regained: a lapsed lane's lease was renewed, so no one took it; serve it
// again, and claim what arrived meanwhile.
func (c *Coordinator) regained(key string, l cluster.Lease) {
	c.log.Info("cluster.lease_regained", zap.String("lane", key), zap.String("lease", l.Name), zap.Int64("token", l.Token))
	c.poke()
}

// holds reports whether the lane's lease is this node's, served or lapsed.
func (c *Coordinator) holds(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.owned[key]
	return ok
}
