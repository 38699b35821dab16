package api

import (
	"context"

	"github.com/gatewayd/gatewayd/gateway"
)

// The work view on the API lane: a turn's status message (OutProgress) and
// its edits reach the request that sent the message as SSE "progress"
// events carrying the gateway.WorkView as JSON, and the answer carries the
// last view ("progress") and its summary line ("summary").

// startProgress attaches a status message to the request waiting for the
// message it reports on. Its id shares the previews' table, so it leaves
// with the request; only EditProgress ever names it.
func (p *Platform) startProgress(out gateway.Outbound) string {
	id := p.nextID("progress-")
	p.mu.Lock()
	defer p.mu.Unlock()
	if w := primaryOf(p.waiters[out.InReplyTo]); w != nil {
		p.previews[id] = w
		w.setProgress(out.Progress)
	} else {
		p.offerRemoteLocked(out, id, relayProgress, encodeView(out.Progress))
	}
	return id
}

// EditProgress implements gateway.ProgressEditor.
func (p *Platform) EditProgress(_ context.Context, _ gateway.Address, messageID, _ string, view gateway.WorkView) error {
	p.mu.Lock()
	w := p.previews[messageID]
	p.mu.Unlock()
	if w != nil {
		w.setProgress(&view)
		return nil
	}
	p.editRemote(messageID, encodeView(&view))
	return nil
}

func (w *waiter) setProgress(v *gateway.WorkView) {
	if v == nil {
		return
	}
	w.mu.Lock()
	w.progress = v
	w.progressSeq++
	w.mu.Unlock()
	w.signal()
}

// progressSince returns the latest view when it is newer than seq.
func (w *waiter) progressSince(seq int) (*gateway.WorkView, int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.progressSeq == seq {
		return nil, seq
	}
	return w.progress, w.progressSeq
}

// withProgress adds the request's last work view to its answer.
func withProgress(resp *Response, sender *waiter) {
	if sender == nil {
		return
	}
	v, _ := sender.progressSince(0)
	if v == nil {
		return
	}
	resp.Progress = v
	if v.Done {
		resp.Summary = v.Summary
	}
}
