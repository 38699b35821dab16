package api

import (
	"context"
	"encoding/json"
	"strings"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// How outbound messages reach requests. Nothing the outbox sends counts as
// delivered when Send returns: a response may still fail to be written, and
// a lane may have no request open. So Send answers gateway.ErrDeferred for
// every outbox row (ID != 0); the row stays held in the outbox until the
// response carrying it was written (Delivered) or is handed back for the
// lane's next request (Redeliver). Previews and direct sends (ID 0) have no
// row to report and are returned as sent when a request took them.

// Send hands an outbound to the requests waiting for it: a preview starts a
// stream, a reply or notice answering a message ends the requests waiting
// for that message (after its answer is recorded), and a lane notice is
// attached to every request open on the lane. An approval question is such
// a notice that also carries the request structured (the "approval"
// event), and so is each question of Codex's (the "question" event). With no request to take it, Send defers it to the lane's next
// request; an answer whose request is gone waits there too.
func (p *Platform) Send(ctx context.Context, out gateway.Outbound) (string, error) {
	switch {
	case out.Kind == gateway.OutPreview:
		return p.startPreview(out), nil
	case out.Kind == gateway.OutProgress:
		return p.startProgress(out), nil
	case out.InReplyTo != "":
		return p.answer(ctx, out)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.shareLocked(out)
}

func (p *Platform) startPreview(out gateway.Outbound) string {
	id := p.nextID("preview-")
	p.mu.Lock()
	defer p.mu.Unlock()
	if w := primaryOf(p.waiters[out.InReplyTo]); w != nil {
		p.previews[id] = w
		w.setPreview(out.Text)
	} else {
		p.offerRemoteLocked(out, id, relayPreview, []byte(out.Text))
	}
	return id
}

// answer records the answer to message out.InReplyTo and ends every
// request waiting for it with the recorded body.
func (p *Platform) answer(ctx context.Context, out gateway.Outbound) (string, error) {
	// The original request leaves the lane first, so no notice joins it
	// after its body is built. Replays that register while the answer is
	// recorded are collected below; later ones find it in the store.
	primary := p.detachPrimary(out.InReplyTo)
	if primary == nil && p.cfg.Relay != nil {
		// The request may be on another node: what the turn streamed
		// reaches it before the answer that ends it.
		fctx, cancel := context.WithTimeout(ctx, flushTimeout)
		p.cfg.Relay.Flush(fctx)
		cancel()
	}
	body, recorded := p.recordAnswer(ctx, out, primary)
	p.endRemote(out.Address.SessionKey(), out.InReplyTo)
	p.mu.Lock()
	defer p.mu.Unlock()
	waiting := p.waiters[out.InReplyTo]
	delete(p.waiters, out.InReplyTo)
	if primary != nil {
		waiting = append(waiting, primary)
	}
	if len(waiting) == 0 {
		if recorded && (clientChosenID(out.InReplyTo) || p.cfg.SharedAnswers) {
			// Nobody waits, but the client named this message: it asks
			// again by replaying the id (or GET), which returns the
			// recorded answer. Carrying it on the lane's next request too
			// would answer it twice. With shared answers the request may
			// be on another node, which reads the recorded answer.
			p.log.Info("api.answer_recorded", zap.String("lane", out.Address.ChatID), zap.String("message", out.InReplyTo))
			return p.nextID("answer-"), nil
		}
		// A message whose id the client never learnt (it went away before
		// the answer): the lane's next response carries it, as a notice.
		return p.shareLocked(out)
	}
	for _, w := range waiting {
		p.carryLocked(w, out.ID)
		w.finish(out, body)
	}
	return p.nextID("reply-"), deferred(out)
}

// detachPrimary takes the request that sent message id (not a replay) off
// the platform's lists, with its previews.
func (p *Platform) detachPrimary(id string) *waiter {
	p.mu.Lock()
	defer p.mu.Unlock()
	w := primaryOf(p.waiters[id])
	if w == nil {
		return nil
	}
	p.removeLocked(id, w)
	return w
}

// recordAnswer builds the answer body and records it; the recorded body
// (an earlier delivery's, if any) is what every request and replay gets.
// recorded reports whether a replay will find it.
func (p *Platform) recordAnswer(ctx context.Context, out gateway.Outbound, primary *waiter) (body []byte, recorded bool) {
	body, err := json.Marshal(responseFor(out, primary))
	if err != nil {
		p.log.Error("api.answer_encode_failed", zap.String("message", out.InReplyTo), zap.Error(err))
		return nil, false
	}
	if p.cfg.Answers == nil { // not running (Run refuses to start without it)
		return body, false
	}
	stored, err := p.cfg.Answers.RecordAnswer(ctx, out.Address.SessionKey(), out.InReplyTo, body)
	if err != nil {
		// The client waiting now still gets its answer; only a replay
		// will not find it.
		p.log.Error("api.answer_record_failed", zap.String("message", out.InReplyTo), zap.Error(err))
		return body, false
	}
	return stored, true
}

// generatedIDPrefix starts the ids the platform makes for messages posted
// without one. The client learns such an id only from the answer, so it
// cannot replay it.
const generatedIDPrefix = "gw~"

func clientChosenID(id string) bool { return !strings.HasPrefix(id, generatedIDPrefix) }

// shareLocked attaches a notice to every request open on its lane, or
// defers it to the lane's next request. The caller holds p.mu.
func (p *Platform) shareLocked(out gateway.Outbound) (string, error) {
	return p.shareNoteLocked(out, note{row: out.ID, text: out.Text})
}

// shareNoteLocked is shareLocked for a prepared note (a file's).
func (p *Platform) shareNoteLocked(out gateway.Outbound, n note) (string, error) {
	p.offerNotice(out, n) // for the requests other nodes hold
	lane := out.Address.ChatID
	attached := false
	for _, ws := range p.waiters {
		for _, w := range ws {
			if w.replay || w.lane != lane {
				continue
			}
			if p.carryLocked(w, out.ID) {
				w.addNotice(n, out.Approval, out.Question)
			}
			attached = true
		}
	}
	if attached {
		return p.nextID("notice-"), deferred(out)
	}
	if out.ID != 0 {
		p.deferredLanes[lane] = true
	}
	p.log.Info("api.notice_held", zap.String("lane", lane), zap.Int64("outbox", out.ID),
		zap.String("in_reply_to", out.InReplyTo), zap.String("kind", string(out.Kind)))
	return "", gateway.ErrDeferred
}

// deferred is Send's error for an outbound a request took: ErrDeferred
// while its outbox row waits for the response to be written, nil when
// there is no row to report.
func deferred(out gateway.Outbound) error {
	if out.ID == 0 {
		return nil
	}
	return gateway.ErrDeferred
}
