package ext

import (
	"context"

	"github.com/gatewayd/gatewayd/gateway/chat"
)

// Choices is how a feature offers choices a lane picks by pressing a
// button (/model, /effort).
type Choices interface {
	// NotifyChoices sends text to the lane at addr as a reply to replyTo,
	// with buttons where the platform shows them; a press comes back to
	// the Callback registered for its id's prefix. Elsewhere, or when that
	// send fails, the text alone goes through the durable outbox: it must
	// say how to choose without the buttons.
	NotifyChoices(ctx context.Context, addr chat.Address, replyTo, text string, buttons []chat.Button)
}
