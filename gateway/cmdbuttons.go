package gateway

import (
	"context"
	"strings"

	"go.uber.org/zap"
)

// Buttons that run a gateway command (the work view's Diff and Undo) carry
// "cmd:<name>". A press is delivered again as the typed command, with the
// press's own message id, so it is recorded, deduplicated and answered
// exactly as if the user had typed it.

const commandPrefix = "cmd:"

// commandButton is a button running the command name.
func commandButton(name, label string) Button { return Button{ID: commandPrefix + name, Label: label} }

// commandButtons are those of buttons whose command the gateway has.
func (s *commandSet) commandButtons(buttons ...Button) []Button {
	var out []Button
	for _, b := range buttons {
		if s.isCommand(strings.TrimPrefix(b.ID, commandPrefix)) {
			out = append(out, b)
		}
	}
	return out
}

type commandButtons struct {
	deliver func(ctx context.Context, in Inbound) (bool, error)
	out     *deliverer
	log     *zap.Logger
	cmds    *commandSet // the commands a button may run
}

func (c *commandButtons) register(h *host) {
	c.cmds = &h.commandSet
	h.callback(commandPrefix, c.pressed)
}

func (c *commandButtons) pressed(ctx context.Context, in Inbound) {
	name := strings.TrimPrefix(in.Callback, commandPrefix)
	if !c.cmds.isCommand(name) {
		c.log.Info("inbound.callback_unknown_command", zap.String("lane", in.Address.SessionKey()), zap.String("command", name))
		return
	}
	in.Text, in.Callback = "/"+name, ""
	if _, err := c.deliver(ctx, in); err != nil {
		c.log.Error("inbound.command_button_failed", zap.String("lane", in.Address.SessionKey()), zap.String("command", name), zap.Error(err))
		c.out.Notify(ctx, in.Address, "", "Could not run /"+name+" (storage error). Please try again.")
	}
}
