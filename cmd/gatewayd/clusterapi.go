package main

// The API lane on every node: a request sent to a node that does not own
// its lane waits there for the answer the owner records (platforms/api
// shared.go). The owner's commit NOTIFYs store.AnswerChannel with the
// message id; every node's LISTEN connection hands it to its API platform.

// notified routes one notification of the LISTEN connection.
func (c *clusterNode) notified(channel, payload string) {
	if channel == inboxChannel {
		c.poke()
		return
	}
	if c.answered != nil {
		c.answered(payload)
	}
}

// shareAnswers tells the API platform of the answers other nodes commit.
func (d *daemon) shareAnswers() {
	if d.cluster != nil {
		d.cluster.answered = d.api.AnswerRecorded
	}
}

// OwnedLanes is gateway.OwnedLanes: the lanes whose outbox this node reads
// (Serves still checks each row's lease before it is sent).
func (c *clusterNode) OwnedLanes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := make([]string, 0, len(c.owned))
	for key := range c.owned {
		keys = append(keys, key)
	}
	return keys
}
