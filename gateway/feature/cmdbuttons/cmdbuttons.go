// Package cmdbuttons runs a gateway command from a button (the work
// view's Diff and Undo): a button whose id is "cmd:<name>"
// (ext.CommandButton) is delivered again as the typed command, with the
// press's own message id, so it is recorded, deduplicated and answered
// exactly as if the user had typed it.
package cmdbuttons

import (
	"context"
	"strings"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
)

// Buttons is the feature.
type Buttons struct {
	host ext.Host
	log  *zap.Logger
}

// New is the feature.
func New() *Buttons { return &Buttons{} }

// Name is the feature's name.
func (b *Buttons) Name() string { return "cmdbuttons" }

// Register routes the presses of command buttons.
func (b *Buttons) Register(h ext.Host) error {
	b.host, b.log = h, h.Logger()
	h.Callback(ext.CommandButtonPrefix, b.pressed)
	return nil
}

// pressed runs the button's command, with its arguments, as typed; a
// command the gateway does not have (an old button) is logged and
// dropped.
func (b *Buttons) pressed(ctx context.Context, in chat.Inbound) {
	line := strings.TrimPrefix(in.Callback, ext.CommandButtonPrefix)
	name, _, _ := strings.Cut(line, " ")
	if !b.host.HasCommand(name) {
		b.log.Info("inbound.callback_unknown_command", zap.String("lane", in.Address.SessionKey()), zap.String("command", name))
		return
	}
	in.Text, in.Callback = "/"+line, ""
	if _, err := b.host.Deliver(ctx, in); err != nil {
		b.log.Error("inbound.command_button_failed", zap.String("lane", in.Address.SessionKey()), zap.String("command", name), zap.Error(err))
		b.host.Notify(ctx, in.Address, "", "Could not run /"+name+" (storage error). Please try again.")
	}
}
