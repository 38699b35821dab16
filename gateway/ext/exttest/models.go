package exttest

import (
	"context"

	"github.com/gatewayd/gatewayd/gateway/chat"
)

// NotifyChoices records a notice with its buttons.
func (h *Host) NotifyChoices(_ context.Context, addr chat.Address, replyTo, text string, buttons []chat.Button) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.notices = append(h.notices, Notice{Addr: addr, ReplyTo: replyTo, Text: text, Buttons: buttons})
}
