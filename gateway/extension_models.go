package gateway

import (
	"context"

	"github.com/gatewayd/gatewayd/gateway/chat"
)

// NotifyChoices is ext.Choices: buttons where the platform has them, sent
// directly (the outbox keeps no buttons), else the text as a notice.
func (e *extHost) NotifyChoices(ctx context.Context, addr chat.Address, replyTo, text string, buttons []chat.Button) {
	e.out.sendWithButtons(ctx, addr, replyTo, text, buttons)
}
