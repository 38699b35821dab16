package exttest

import (
	"context"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
)

// The place hooks (ext.PlaceHooks) are accepted and not run, as the work
// hooks are: the feature that places lanes is tested through the real
// core (gateway's harness).

func (h *Host) ProvidePlaces(ext.Places) error                  { return nil }
func (h *Host) DefaultDir(string) string                        { return h.Dir }
func (h *Host) OnReady(func(ctx context.Context, t ext.Turn))   {}
func (h *Host) OnStarted(func(ctx context.Context, t ext.Turn)) {}

// NotifyButtons records the text as a notice; the buttons are not kept.
func (h *Host) NotifyButtons(ctx context.Context, addr chat.Address, replyTo, text string, _ []chat.Button) {
	h.Notify(ctx, addr, replyTo, text)
}

// CommandButtons are the buttons asked for, as if every command were the
// gateway's.
func (h *Host) CommandButtons(nameLabels ...string) []chat.Button {
	var out []chat.Button
	for i := 0; i+1 < len(nameLabels); i += 2 {
		out = append(out, chat.Button{ID: "cmd:" + nameLabels[i], Label: nameLabels[i+1]})
	}
	return out
}

// The fake turn stays where it is: it runs nowhere.

func (t *Turn) SetDir(string)              {}
func (t *Turn) Refuse(string)              {}
func (t *Turn) ID() string                 { return "" }
func (t *Turn) OfferOnClose([]chat.Button) {}
