// Package command is the gateway's one registry of commands: a command's
// name, help line, menu entry and handler are registered together, and the
// parser, /help, the command buttons and the platforms' menus all read the
// same Set. Any other /word is not a command (the core sends it to Codex as
// text).
//
// The registry knows nothing of lanes: a Set is generic in the call its
// handlers take, so the core keeps its own call type.
package command

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Info describes one command.
type Info struct {
	Name        string // without the slash
	Args        string // argument synopsis for /help ("" when none)
	Description string // one line, for /help and the platforms' menus
	// Menu: offered in the platforms' command menus (Telegram
	// setMyCommands, Discord slash commands). Commands that need an
	// argument to be useful are typed instead.
	Menu bool
}

// A Func runs a command. It reports whether the command is answered and
// its inbound row can be closed as done; false when it queued work that
// closes the row, or closed the row itself.
type Func[C any] func(ctx context.Context, call C) (done bool)

// Set is a registry of commands: a fixed list whose handlers are set by
// Handle, then the commands Add registers after it. It is filled while
// the gateway is built and read-only once Check passed.
type Set[C any] struct {
	fixed    []Info // listed first, in /help order; handlers come by Handle
	handlers map[string]Func[C]
	added    []Info  // Add's commands, in registration order
	errs     []error // registrations refused, reported by Check
	// list is every command in /help order, complete once Check ran.
	list []Info
}

// NewSet is a registry whose first commands are fixed, in /help order.
func NewSet[C any](fixed []Info) *Set[C] {
	return &Set[C]{fixed: fixed, handlers: make(map[string]Func[C])}
}

// Handle sets the handler of a command of the fixed list.
func (s *Set[C]) Handle(name string, fn Func[C]) { s.handlers[name] = fn }

// menuName is what both platforms' menus accept as a command's name
// (Telegram setMyCommands: 1-32 of a-z 0-9 _; Discord's slash commands
// take that too).
var menuName = regexp.MustCompile(`^[a-z0-9_]{1,32}$`)

// Add registers a command with its description, after the fixed ones. A
// name taken or one a platform's menu would refuse is noted and reported
// by Check, so a gateway never starts with a menu that fails to register.
func (s *Set[C]) Add(c Info, fn Func[C]) {
	switch {
	case !menuName.MatchString(c.Name):
		s.errs = append(s.errs, fmt.Errorf("gateway: command name %q is not 1-32 of a-z, 0-9 and _", c.Name))
	case s.handlers[c.Name] != nil || slices.ContainsFunc(s.fixed, func(k Info) bool { return k.Name == c.Name }):
		s.errs = append(s.errs, fmt.Errorf("gateway: command /%s registered twice", c.Name))
	case fn == nil:
		s.errs = append(s.errs, fmt.Errorf("gateway: command /%s has no handler", c.Name))
	default:
		s.handlers[c.Name] = fn
		s.added = append(s.added, c)
	}
}

// Check reports a refused registration, a fixed command nobody handles,
// or a handler for a command that is listed nowhere (it would never be
// parsed); then it builds the list.
func (s *Set[C]) Check() error {
	errs := slices.Clone(s.errs)
	listed := make(map[string]bool, len(s.fixed)+len(s.added))
	for _, c := range slices.Concat(s.fixed, s.added) {
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
	s.list = helpLast(slices.Concat(s.fixed, s.added))
	return nil
}

// helpLast moves /help to the end of list: the added commands come after
// the fixed ones, and the menu and /help still end with the way to see
// them all.
func helpLast(list []Info) []Info {
	i := slices.IndexFunc(list, func(c Info) bool { return c.Name == "help" })
	if i < 0 {
		return list
	}
	help := list[i]
	return append(slices.Delete(list, i, i+1), help)
}

// fitsMenus reports a description or synopsis that a platform's menu
// would refuse (Telegram: description 1-256; Discord: description and
// option description 1-100).
func fitsMenus(c Info) error {
	if n := utf8.RuneCountInString(c.Description); n == 0 || n > 100 {
		return fmt.Errorf("gateway: /%s: description of %d characters, want 1-100", c.Name, n)
	}
	if n := utf8.RuneCountInString(c.Args); n > 100 {
		return fmt.Errorf("gateway: /%s: argument synopsis of %d characters, want at most 100", c.Name, n)
	}
	return nil
}

// Has reports whether name (lower case, no slash) is a registered command.
func (s *Set[C]) Has(name string) bool { return s.handlers[name] != nil }

// Parse recognises "/cmd", "/cmd args" and "/cmd@botname" of a registered
// command: its name (lower case, no slash or bot name) and arguments.
func (s *Set[C]) Parse(text string) (name, args string, ok bool) {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "/") {
		return "", "", false
	}
	word, args, _ := strings.Cut(text[1:], " ")
	word, _, _ = strings.Cut(word, "@")
	word = strings.ToLower(strings.TrimSpace(word))
	if !s.Has(word) {
		return "", "", false
	}
	return word, strings.TrimSpace(args), true
}

// Run runs the handler of the command name (one Parse accepted) and
// reports whether it is answered; an unknown name is not.
func (s *Set[C]) Run(ctx context.Context, name string, call C) (done bool) {
	fn := s.handlers[name]
	return fn != nil && fn(ctx, call)
}

// List is every command in /help order: the fixed ones, then the added
// ones in registration order, /help last.
func (s *Set[C]) List() []Info { return slices.Clone(s.list) }

// HelpText is /help: every command, in order.
func (s *Set[C]) HelpText() string {
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
