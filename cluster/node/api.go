package node

import (
	"context"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/store"
)

// The API lane on every node: a request sent to a node that does not own
// its lane waits there for the answer the owner records (platforms/api
// shared.go). The owner's commit NOTIFYs store.AnswerChannel with the
// message id; every node's LISTEN connection hands it to its API platform.

// notified routes one notification of the LISTEN connection.
func (c *Coordinator) notified(ctx context.Context, channel, payload string) {
	switch channel {
	case inboxChannel:
		c.poke()
	case store.AnswerChannel:
		if c.answered != nil {
			c.answered(payload)
		}
	case cluster.StreamChannel:
		if c.streamed != nil {
			c.streamed(payload)
		}
	case cluster.CallChannel:
		c.wakeCalls()
	case cluster.CallReplyChannel:
		c.replyNotified(payload)
	}
}

// SetAnswered makes answered (the API platform's AnswerRecorded) hear of
// every answer a node commits. Call it before Run.
func (c *Coordinator) SetAnswered(answered func(messageID string)) {
	c.answered = answered
}

// OwnedLanes is gateway.LaneGate's: the lanes whose outbox this node reads
// (Serves still checks each row's lease before it is sent).
func (c *Coordinator) OwnedLanes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.owned))
	for key := range c.owned {
		keys = append(keys, key)
	}
	return keys
}
