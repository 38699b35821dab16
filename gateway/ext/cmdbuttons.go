package ext

import (
	"context"
	"strings"

	"github.com/gatewayd/gatewayd/gateway/chat"
)

// CommandButtonPrefix starts the id of a button that runs a gateway
// command (feature/cmdbuttons): "cmd:<name>".
const CommandButtonPrefix = "cmd:"

// CommandButton is a button running the command name (lower case, no
// slash) when pressed, as if it were typed.
func CommandButton(name, label string) chat.Button {
	return chat.Button{ID: CommandButtonPrefix + name, Label: label}
}

// CommandLineButton is a button running a command with its arguments,
// line being what follows the slash ("fork 01a2…"), as if it were typed.
// Keep line short: Telegram carries at most 64 bytes of a button's id.
func CommandLineButton(line, label string) chat.Button {
	return chat.Button{ID: CommandButtonPrefix + line, Label: label}
}

// CommandOfButton is the command a CommandButton or CommandLineButton
// runs, without its arguments; false for any other button.
func CommandOfButton(b chat.Button) (name string, ok bool) {
	line, ok := CommandLineOfButton(b)
	name, _, _ = strings.Cut(line, " ")
	return name, ok
}

// CommandLineOfButton is what a command button types after the slash:
// the command and its arguments.
func CommandLineOfButton(b chat.Button) (line string, ok bool) {
	return strings.CutPrefix(b.ID, CommandButtonPrefix)
}

// CommandHooks are what running a command from elsewhere than its typed
// message uses of the core.
type CommandHooks interface {
	// HasCommand reports whether name (lower case, no slash) is a gateway
	// command, the core's or a feature's. It is complete once every
	// feature registered.
	HasCommand(name string) bool
	// Deliver hands in to intake exactly as a platform's Deliver does: it
	// is recorded, deduplicated by its message id, then routed.
	Deliver(ctx context.Context, in chat.Inbound) (duplicate bool, err error)
}
