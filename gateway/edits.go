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

type editsStore interface {
	SetInboundText(ctx context.Context, id int64, text string) error
}

// edit applies an edited message.
func (k *intake) edit(ctx context.Context, in Inbound) {
	l := k.lanes.lookup(in.Address.SessionKey())
	if l == nil || in.Text == "" {
		return
	}
	text := framedText(in, &k.host.commandSet)
	if _, isCommand := k.host.parseCommand(text); isCommand {
		return // a command runs when it is sent; editing it later does nothing
	}
	if id, ok := l.replaceQueued(in.MessageID, text); ok {
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
