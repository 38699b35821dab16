package gateway

import (
	"context"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
)

// NotifyChoices is ext.Choices: buttons where the platform has them, sent
// directly (the outbox keeps no buttons), else the text as a notice.
// extChoices is a feature's host's ext.Choices: notices with buttons.
type extChoices struct{ *extCore }

var _ ext.Choices = extChoices{}

func (e extChoices) NotifyChoices(ctx context.Context, addr chat.Address, replyTo, text string, buttons []chat.Button) {
	e.out.SendWithButtons(ctx, addr, replyTo, text, buttons)
}
