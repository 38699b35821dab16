package gateway

import (
	"context"

	"github.com/gatewayd/gatewayd/gateway/command"
	"github.com/gatewayd/gatewayd/store"
)

// CommandInfo describes one command the gateway handles itself.
type CommandInfo = command.Info

// coreCommands are the commands of the modules inside this package, in
// /help order; each module registers the handler of its own with
// host.command. The features' commands follow them, in the order the
// features register.
var coreCommands = []CommandInfo{
	{Name: "new", Description: "Start a fresh Codex thread (same as /reset)", Menu: true},
	{Name: "reset", Description: "Start a fresh Codex thread", Menu: true},
	{Name: "stop", Description: "Interrupt the running reply, keep the thread", Menu: true},
	{Name: "retry", Description: "Run the message cut off by a restart or a timeout again", Menu: true},
	{Name: "status", Description: "Show this conversation's thread, usage and queue", Menu: true},
	{Name: "help", Description: "List commands", Menu: true},
}

// commandCall is one gateway command as the lane received it.
type commandCall struct {
	lane      *lane
	name      string // lower case, without the slash
	args      string
	inboundID int64
	msgID     string
	sender    string // platform user id of who typed it ("" after a restart)
	// senderName is the name shown for them ("" when not known).
	senderName string
}

// command registers the handler of a command listed in coreCommands.
func (h *host) command(name string, fn command.Func[commandCall]) { h.commands.Handle(name, fn) }

// isCommand reports whether text is a gateway command.
func (h *host) isCommand(text string) bool {
	_, _, ok := h.commands.Parse(text)
	return ok
}

// runsAsTurn says whether a message will be a turn (not a command, not
// empty), as dispatch decides.
func (h *host) runsAsTurn(text string, att []store.Attachment) bool {
	return len(att) > 0 || text != "" && !h.isCommand(text)
}

// runCommand runs a parsed command's handler and closes its inbound row
// when the handler says it is answered.
func (h *host) runCommand(ctx context.Context, c commandCall, closeDone func(ctx context.Context, id int64)) {
	if h.commands.Run(ctx, c.name, c) {
		closeDone(ctx, c.inboundID)
	}
}

// Commands are the gateway's commands in /help order: the core's, then the
// features' in the order they registered. The platforms build their
// command menus from it.
func (g *Gateway) Commands() []CommandInfo { return g.host.commands.List() }
