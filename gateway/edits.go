package gateway

import (
	"context"

	"go.uber.org/zap"
)

// Edits: people fix a message after sending it. An edit of a
// message still waiting in the lane's queue replaces its text, there and
// in its inbox row (a restart runs the edited text); an edit of the
// message whose turn is running is steered into the turn as
// "(edited) …"; an edit of an older message, or of one the gateway never
// saw, changes nothing.
//
// A message's turn is taken from the queue well before codex has it (the
// thread loads, a compaction may run): until its text goes to turn/start
// an edit still replaces it, and from then until codex has the turn (when
// a steer could not land yet) the edit waits for it and is steered.

type editsStore interface {
	SetInboundText(ctx context.Context, id int64, text string) error
}

// edit applies an edited message.
func (k *intake) edit(ctx context.Context, in Inbound) {
	l := k.lanes.lookup(in.Address.SessionKey())
	if l == nil || in.Text == "" {
		return
	}
	text := k.host.textOf(ctx, in)
	if k.host.isCommand(text) {
		return // a command runs when it is sent; editing it later does nothing
	}
	if id, ok := l.replaceWaiting(in.MessageID, text); ok {
		if err := k.st.SetInboundText(ctx, id, text); err != nil {
			k.log.Warn("inbound.edit_record_failed", zap.String("lane", l.key), zap.Error(err))
		}
		k.log.Info("inbound.edited_queued", zap.String("lane", l.key), zap.String("message", in.MessageID))
		return
	}
	if k.steerEdit != nil && k.steerEdit(ctx, l, in.MessageID, "(edited) "+text) {
		k.log.Info("inbound.edited_steered", zap.String("lane", l.key), zap.String("message", in.MessageID))
		return
	}
	k.log.Info("inbound.edit_ignored", zap.String("lane", l.key), zap.String("message", in.MessageID))
}

// turnEdits is what the lane's current item knows of edits of its message
// until codex has its turn; guarded by lane.mu.
type turnEdits struct {
	editable  bool          // an edit may replace what it runs (editableTurn)
	inboundID int64         // the message's inbox row, which an edit rewrites
	text      string        // the edited text the turn runs ("": as queued)
	taken     bool          // the text went to turn/start: an edit is steered now
	inCodex   chan struct{} // closed once codex has the turn, or the item ended
}

func newTurnEdits(it item) turnEdits {
	return turnEdits{editable: editableTurn(it), inboundID: it.inboundID, inCodex: make(chan struct{})}
}

// editableTurn says an edit may replace what the item runs: a message's
// turn of text only (a file list is the message's too), not a rerun or a
// review.
func editableTurn(it item) bool {
	return it.kind == itemTurn && !it.retry && len(it.images) == 0 && it.review == nil
}

// release wakes the edits waiting for codex to have the turn; lane.mu is
// held.
func (e *turnEdits) release() {
	select {
	case <-e.inCodex:
	default:
		close(e.inCodex)
	}
}

// replaceWaiting gives message msgID's turn the text while it waits: in
// the queue, or taken from it but not yet sent to codex. It returns the
// message's inbox row.
func (l *lane) replaceWaiting(msgID, text string) (inboundID int64, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ok = l.queue.Update(func(it item) bool {
		return it.msgID == msgID && editableTurn(it)
	}, func(it *item) {
		it.text, it.journal, inboundID = text, nil, it.inboundID
	})
	if ok {
		return inboundID, true
	}
	cur := l.cur
	if cur == nil || cur.msgID != msgID || !cur.edits.editable || cur.edits.taken || cur.finishing || cur.discard || cur.cutOff {
		return 0, false
	}
	cur.edits.text = text
	return cur.edits.inboundID, true
}

// takeTurnText is the text the turn sends with turn/start: its message's
// edit when there was one (edited reports it). From here an edit is
// steered, once codex has the turn (turnInCodex).
func (c *turnState) takeTurnText(text string) (_ string, edited bool) {
	c.lane.mu.Lock()
	defer c.lane.mu.Unlock()
	if !c.runningLocked() {
		return text, false
	}
	c.edits.taken = true
	if e := c.edits.text; e != "" {
		return e, true
	}
	return text, false
}

// turnInCodex records that codex has the turn (its Started event): an
// edit waiting for it can be steered now.
func (c *turnState) turnInCodex() {
	c.lane.mu.Lock()
	if c.runningLocked() {
		c.edits.release()
	}
	c.lane.mu.Unlock()
}

// editTarget is the running turn and its thread when it is message
// msgID's and can still take input. When the turn's text has gone to
// turn/start but codex does not have the turn yet, it waits for that (or
// for ctx) first.
func (l *lane) editTarget(ctx context.Context, msgID string) (*turnState, string) {
	l.mu.Lock()
	if cur := l.cur; cur != nil && cur.msgID == msgID && cur.edits.taken {
		inCodex := cur.edits.inCodex
		l.mu.Unlock()
		select {
		case <-inCodex:
		case <-ctx.Done():
			return nil, ""
		}
		l.mu.Lock()
	}
	defer l.mu.Unlock()
	cur := l.cur
	if cur == nil || cur.kind != itemTurn || cur.msgID != msgID || cur.answered || cur.finishing || cur.discard ||
		cur.cutOff || cur.compacting || cur.threadID == "" {
		return nil, ""
	}
	return cur, cur.threadID
}
