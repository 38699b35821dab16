package gateway

import (
	"context"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/outbox"
	"github.com/gatewayd/gatewayd/store"
)

// refusalStore closes a refused message, keeps it and its answer in the
// lane's transcript and queues the answer, in one transaction.
type refusalStore interface {
	RefuseInbound(ctx context.Context, r store.Refusal) (int64, error)
}

var _ refusalStore = (*store.Store)(nil)

// refusals answers a queued item that will not run with the reason, and
// closes it, for the refuse hooks of the modules that stop a lane's turns
// (no codex account, a lane over its disk quota). The message is closed
// (inbox state failed), not kept to run later: it is answered at once, and
// old requests running by themselves hours later would surprise more than
// a resend.
type refusals struct {
	journal journal // a refused item's journal entry goes
	st      refusalStore
	inbox   inbox
	out     *outbox.Courier
	log     *zap.Logger
}

// refuse answers it with reason and closes its inbound row.
func (r refusals) refuse(ctx context.Context, l *lane, it item, reason string) {
	r.journal.dropUnstarted(ctx, l, it)
	notice := outbox.Notice(l.addr, replyTarget(it), reason)
	rf := store.Refusal{InboundID: it.inboundID, Text: it.text, MessageID: it.msgID, Notice: notice}
	if _, err := r.st.RefuseInbound(ctx, rf); err != nil {
		// Not kept in the transcript, but never silent: the row is closed
		// and the answer sent as any notice is.
		r.log.Error("turn.refusal_record_failed", zap.String("lane", l.key), zap.Error(err))
		r.inbox.set(ctx, it.inboundID, store.InboundFailed)
		r.out.Notify(ctx, l.addr, replyTarget(it), reason)
		return
	}
	r.out.Poke()
}
