package gateway

import (
	"context"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
)

// The core's side of ext.RoomHooks: the features that shape a message's
// text before intake records it, and take what a shared room says between
// turns.

// roomHooks are the features' text and ambient hooks; filled while the
// features register, read-only once messages arrive.
type roomHooks struct {
	text    []func(ctx context.Context, in chat.Inbound, text string) string
	ambient []func(ctx context.Context, in chat.Inbound)
}

// roomServices are ext.RoomHooks, the extension host's (extCore embeds
// them).
type roomServices struct {
	h    *host
	gate func() LaneGate // the gateway's (nil: one node)
}

func (s roomServices) OnText(fn func(ctx context.Context, in chat.Inbound, text string) string) {
	s.h.room.text = append(s.h.room.text, fn)
}

func (s roomServices) OnAmbient(fn func(ctx context.Context, in chat.Inbound)) {
	s.h.room.ambient = append(s.h.room.ambient, fn)
}

func (s roomServices) IsCommand(text string) bool { return s.h.isCommand(text) }

func (s roomServices) Clustered() bool { return s.gate() != nil }

var _ ext.RoomHooks = (*extHost)(nil)

// textOf is in's text as the features shape it to be recorded.
func (h *host) textOf(ctx context.Context, in Inbound) string {
	text := in.Text
	for _, fn := range h.room.text {
		text = fn(ctx, in, text)
	}
	return text
}

// ambient hands a shared room's unaddressed message to the features.
func (h *host) ambient(ctx context.Context, in Inbound) {
	for _, fn := range h.room.ambient {
		fn(ctx, in)
	}
}
