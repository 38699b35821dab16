package gateway

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/gatewayd/gatewayd/store"
)

// The host is the one registry of commands: a command's name, help line,
// menu entry and handler are registered together, and the parser, /help,
// the command buttons and the platforms' menus (through
// Gateway.Commands) all read the host. Any other /word goes to Codex as
// text.

// CommandInfo describes one command the gateway handles itself.
type CommandInfo struct {
	Name        string // without the slash
	Args        string // argument synopsis for /help ("" when none)
	Description string // one line, for /help and the platforms' menus
	// Menu: offered in the platforms' command menus (Telegram
	// setMyCommands, Discord slash commands). Commands that need an
	// argument to be useful are typed instead.
	Menu bool
}

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

// command is a parsed gateway command.
type command struct {
	name string // without the slash and any @botname, lower case
	args string
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

// A commandFunc runs a command. It reports whether the command is answered
// and its inbound row can be closed as done; false when it queued work that
// closes the row, or closed the row itself.
type commandFunc func(ctx context.Context, c commandCall) (done bool)

// commandSet is the host's registry of commands. It is filled in New and
// read-only afterwards.
type commandSet struct {
	handlers map[string]commandFunc
	added    []CommandInfo // the features' commands, in registration order
	errs     []error       // registrations refused, reported by check
	// list is every command in /help order, complete once check ran.
	list []CommandInfo
}

// command registers the handler of a command listed in coreCommands.
func (s *commandSet) command(name string, fn commandFunc) {
	s.handlers[name] = fn
}

// menuName is what both platforms' menus accept as a command's name
// (Telegram setMyCommands: 1-32 of a-z 0-9 _; Discord's slash commands
// take that too).
var menuName = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// add registers a command with its description, after the core's. A
// name taken or one a platform's menu would refuse is noted and reported
// by check, so a gateway never starts with a menu that fails to register.
func (s *commandSet) add(c CommandInfo, fn commandFunc) {
	switch {
	case !menuName.MatchString(c.Name):
		s.errs = append(s.errs, fmt.Errorf("gateway: command name %q is not 1-32 of a-z, 0-9 and _", c.Name))
	case s.handlers[c.Name] != nil || slices.ContainsFunc(coreCommands, func(k CommandInfo) bool { return k.Name == c.Name }):
		s.errs = append(s.errs, fmt.Errorf("gateway: command /%s registered twice", c.Name))
	case fn == nil:
		s.errs = append(s.errs, fmt.Errorf("gateway: command /%s has no handler", c.Name))
	default:
		s.handlers[c.Name] = fn
		s.added = append(s.added, c)
	}
}

// check reports a refused registration, a core command no module
// handles, or a handler for a command that is listed nowhere (it would
// never be parsed); then it builds the list.
func (s *commandSet) check() error {
	errs := slices.Clone(s.errs)
	listed := make(map[string]bool, len(coreCommands)+len(s.added))
	for _, c := range slices.Concat(coreCommands, s.added) {
		listed[c.Name] = true
		if s.handlers[c.Name] == nil {
			errs = append(errs, fmt.Errorf("gateway: command /%s has no handler", c.Name))
		}
		if err := fitsMenus(c); err != nil {
			errs = append(errs, err)
		}
	}
	for name := range s.handlers {
		if !listed[name] {
			errs = append(errs, fmt.Errorf("gateway: handler for /%s, which is not a listed command", name))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	s.list = helpLast(slices.Concat(coreCommands, s.added))
	return nil
}

// helpLast moves /help to the end of list: the features' commands come
// after the core's, and the menu and /help still end with the way to
// see them all.
func helpLast(list []CommandInfo) []CommandInfo {
	i := slices.IndexFunc(list, func(c CommandInfo) bool { return c.Name == "help" })
	if i < 0 {
		return list
	}
	help := list[i]
	return append(slices.Delete(list, i, i+1), help)
}

// fitsMenus reports a description or synopsis that a platform's menu
// would refuse (Telegram: description 1-256; Discord: description and
// option description 1-100).
func fitsMenus(c CommandInfo) error {
	if n := utf8.RuneCountInString(c.Description); n == 0 || n > 100 {
		return fmt.Errorf("gateway: /%s: description of %d characters, want 1-100", c.Name, n)
	}
	if n := utf8.RuneCountInString(c.Args); n > 100 {
		return fmt.Errorf("gateway: /%s: argument synopsis of %d characters, want at most 100", c.Name, n)
	}
	return nil
}

// isCommand reports whether name (lower case, no slash) is a gateway command.
func (s *commandSet) isCommand(name string) bool { return s.handlers[name] != nil }

// parseCommand recognises "/cmd", "/cmd args" and "/cmd@botname".
func (s *commandSet) parseCommand(text string) (command, bool) {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "/") {
		return command{}, false
	}
	word, args, _ := strings.Cut(text[1:], " ")
	word, _, _ = strings.Cut(word, "@")
	word = strings.ToLower(strings.TrimSpace(word))
	if !s.isCommand(word) {
		return command{}, false
	}
	return command{name: word, args: strings.TrimSpace(args)}, true
}

// runsAsTurn says whether a message will be a turn (not a command, not
// empty), as dispatch decides.
func (s *commandSet) runsAsTurn(text string, att []store.Attachment) bool {
	if len(att) > 0 {
		return true
	}
	if text == "" {
		return false
	}
	_, isCommand := s.parseCommand(text)
	return !isCommand
}

// runCommand runs a parsed command's handler and closes its inbound row
// when the handler says it is answered.
func (s *commandSet) runCommand(ctx context.Context, c commandCall, closeDone func(ctx context.Context, id int64)) {
	fn := s.handlers[c.name]
	if fn == nil { // parseCommand accepts only registered commands
		return
	}
	if fn(ctx, c) {
		closeDone(ctx, c.inboundID)
	}
}

// helpText is /help: every command, in order.
func (s *commandSet) helpText() string {
	var b strings.Builder
	b.WriteString("Commands:\n")
	for _, c := range s.list {
		name := "/" + c.Name
		if c.Args != "" {
			name += " " + c.Args
		}
		fmt.Fprintf(&b, "%s — %s\n", name, c.Description)
	}
	b.WriteString("Anything else (including other /words) goes to Codex.")
	return b.String()
}

// Commands are the gateway's commands in /help order: the core's, then the
// features' in the order they registered. The platforms build their
// command menus from it.
func (g *Gateway) Commands() []CommandInfo { return slices.Clone(g.host.list) }
