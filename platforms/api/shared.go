package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/store"
)

// Shared answers (several nodes on one database). A request may
// reach a node that does not own its lane: the message is recorded in the
// shared inbox and the owner runs it and records the answer. The node
// holding the request learns of the answer from the database, not from its
// own outbox: AnswerRecorded (woken by the owner's NOTIFY) and a poll every
// SharedPoll (the fallback while the LISTEN connection reconnects) read the
// message's exchange and end its requests with the recorded body.
//
// What the owner streams meanwhile (previews, the work view, notices with
// their approvals and questions) reaches such a request through the
// relay (relay.go); the recorded answer ends it.
// A message that ends without an answer (failed, or cut off when its owner
// died mid-turn) and stays so for endedGrace is answered 503 with
// Retry-After: send it again under a new id.

// DefaultSharedPoll is how often waiting requests look for an answer
// recorded by another node when no notification came.
const DefaultSharedPoll = time.Second

// sharedTimeout bounds one look-up of a message's exchange.
const sharedTimeout = 5 * time.Second

// endedGrace is how long a message must look ended without an answer
// before its requests are told so: the gateway closes a refused or failed
// message's inbox row first and queues the reply that explains it in a
// second write, and that reply is the answer.
const endedGrace = 2 * time.Second

// AnswerRecorded says the answer to message messageID was committed,
// possibly by another node: its waiting requests here are answered.
func (p *Platform) AnswerRecorded(messageID string) {
	if !p.cfg.SharedAnswers || messageID == "" {
		return
	}
	// Every node hears of every answer: only one with a request waiting
	// for it looks it up.
	p.mu.Lock()
	_, waiting := p.waiters[messageID]
	p.mu.Unlock()
	if waiting {
		go p.collectRecorded(messageID)
	}
}

// pollShared looks for the answers of every waiting request until the
// platform stops.
func (p *Platform) pollShared() {
	tick := time.NewTicker(p.cfg.SharedPoll)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
		}
		for _, id := range p.waitingIDs() {
			p.collectRecorded(id)
		}
		if p.cfg.Relay != nil {
			p.pullWaiting()
		}
	}
}

// endedLongEnough reports whether message id has looked ended without an
// answer for endedGrace, counting from the first such look.
func (p *Platform) endedLongEnough(id string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	first, ok := p.endedSince[id]
	if !ok {
		p.endedSince[id] = time.Now()
		return false
	}
	return time.Since(first) >= endedGrace
}

// waitingIDs lists the messages with requests waiting, forgetting the
// ended looks of those without.
func (p *Platform) waitingIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id := range p.endedSince {
		if _, ok := p.waiters[id]; !ok {
			delete(p.endedSince, id)
		}
	}
	ids := make([]string, 0, len(p.waiters))
	for id := range p.waiters {
		ids = append(ids, id)
	}
	return ids
}

// collectRecorded ends the requests waiting for message id if the store
// holds its answer, or says it ended without one.
func (p *Platform) collectRecorded(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), sharedTimeout)
	defer cancel()
	x, err := p.cfg.Answers.Exchange(ctx, PlatformName, id)
	if err != nil {
		p.log.Debug("api.shared_lookup_failed", zap.String("message", id), zap.Error(err))
		return
	}
	ended := x.State == store.InboundFailed || x.State == store.InboundIgnored
	if x.Answer == nil && (!ended || x.AnswerPending || !p.endedLongEnough(id)) {
		return
	}
	if x.Answer != nil && p.cfg.Relay != nil {
		p.pullLane(x.SessionKey) // what was streamed just before the answer
	}
	p.mu.Lock()
	delete(p.endedSince, id)
	waiting := slices.Clone(p.waiters[id]) // removeLocked edits the list in place
	for _, w := range waiting {
		p.removeLocked(id, w)
	}
	p.mu.Unlock()
	for _, w := range waiting {
		if x.Answer == nil {
			w.finishWithout(x.State)
			continue
		}
		w.finish(remoteOutbound(id, x.Answer), withRelayed(x.Answer, w))
	}
	if len(waiting) > 0 {
		p.log.Info("api.shared_answer", zap.String("message", id), zap.Int("requests", len(waiting)),
			zap.Bool("answered", x.Answer != nil))
	}
}

// remoteOutbound rebuilds, from a recorded body, the final outbound a
// stream replays as its last delta.
func remoteOutbound(id string, body []byte) gateway.Outbound {
	var resp Response
	if err := json.Unmarshal(body, &resp); err != nil {
		return gateway.Outbound{InReplyTo: id}
	}
	out := gateway.Outbound{InReplyTo: id, Text: resp.Reply, Fork: resp.Fork}
	if resp.Status != "notice" {
		out.Turn = &gateway.TurnInfo{ThreadID: resp.ThreadID, TurnID: resp.TurnID, Status: resp.Status}
	}
	return out
}

// finishWithout ends the request of a message that ended without an
// answer; the caller has taken w off the waiters.
func (w *waiter) finishWithout(state string) {
	w.mu.Lock()
	w.ended = state
	w.mu.Unlock()
	close(w.done)
}

// endedWithout is the state of a message that ended without an answer,
// "" when it was answered.
func (w *waiter) endedWithout() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ended
}

// unansweredMessage is the 503 text for message id that ended in state
// without an answer.
func unansweredMessage(id, state string) string {
	return fmt.Sprintf("message %q ended without an answer (%s: its node may have stopped mid-turn); send it again with a new id", id, state)
}

// writeUnanswered answers 503 with a retry hint.
func writeUnanswered(w http.ResponseWriter, id, state string) error {
	w.Header().Set("Retry-After", "1")
	writeError(w, http.StatusServiceUnavailable, unansweredMessage(id, state))
	return errNotAnswered
}
