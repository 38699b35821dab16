package gateway

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway/ext"
)

// TestCommandsFitThePlatformsMenus: every command's name and description
// fit both menus' rules (Telegram setMyCommands: 1-32 of a-z 0-9 _,
// description 1-256; Discord slash commands: description 1-100), so
// registering the menu never fails for one long line.
func TestCommandsFitThePlatformsMenus(t *testing.T) {
	name := regexp.MustCompile(`^[a-z0-9_]{1,32}$`)
	seen := map[string]bool{}
	for _, c := range newHarness(t).g.Commands() {
		if !name.MatchString(c.Name) || seen[c.Name] {
			t.Errorf("command name %q is not a valid, unique menu name", c.Name)
		}
		seen[c.Name] = true
		if n := utf8.RuneCountInString(c.Description); n == 0 || n > 100 {
			t.Errorf("/%s: description of %d characters, want 1-100", c.Name, n)
		}
		if n := utf8.RuneCountInString(c.Args); n > 100 {
			t.Errorf("/%s: argument synopsis of %d characters, want at most 100 (Discord's option description)", c.Name, n)
		}
	}
	if len(seen) == 0 {
		t.Fatal("no commands")
	}
}

// commandFeature is a feature that registers the given commands.
type commandFeature struct {
	name string
	cmds []ext.Command
}

func (f commandFeature) Name() string { return f.name }

func (f commandFeature) Register(h ext.Host) error {
	for _, c := range f.cmds {
		h.Command(c)
	}
	return nil
}

func withFeature(f ext.Feature) harnessOpt {
	return func(c *Config) { c.Features = append(c.Features, f) }
}

// TestFeatureCommandIsOneRegistration: a feature's command, registered
// once with its help line, is listed after the core's and before /help
// (the platforms' menus), parsed, run and shown by /help, and a button
// can run it.
func TestFeatureCommandIsOneRegistration(t *testing.T) {
	var calls []ext.Call // commands run on the delivering goroutine: h.send's
	echo := ext.Command{Name: "echo", Args: "TEXT", Description: "Say TEXT back", Menu: true,
		Run: func(_ context.Context, c ext.Call) bool {
			calls = append(calls, c)
			return true
		}}
	h := newHarness(t, withFeature(commandFeature{name: "echo", cmds: []ext.Command{echo}}))
	cmds := h.g.Commands()
	if echo := cmds[len(cmds)-2]; echo != (CommandInfo{Name: "echo", Args: "TEXT", Description: "Say TEXT back", Menu: true}) {
		t.Fatalf("command before /help %+v, want the feature's /echo", echo)
	}
	if last := cmds[len(cmds)-1]; last.Name != "help" {
		t.Errorf("last command /%s, want /help", last.Name)
	}
	if cmds[0].Name != "new" {
		t.Errorf("first command /%s, want the core's /new first", cmds[0].Name)
	}
	h.start(t)
	h.send(t, "a", "m1", "/echo@bot hello there")
	h.send(t, "a", "m2", "/help")
	help := h.p.replyTo(t, "m2").Text
	if !strings.HasSuffix(help, "\n/echo TEXT — Say TEXT back\n/help — List commands\nAnything else (including other /words) goes to Codex.") ||
		strings.Index(help, "/login") > strings.Index(help, "/echo") {
		t.Errorf("/help %q, want /echo after the core's commands, and /help last", help)
	}
	if len(calls) != 1 || calls[0].Args != "hello there" || calls[0].Name != "echo" || calls[0].MsgID != "m1" ||
		calls[0].Lane.Key() != apiAddr("a").SessionKey() {
		t.Errorf("calls %+v, want /echo once with its arguments", calls)
	}
}

// TestCommandRegistrationRefused: a name taken, a name no menu accepts, a
// description a menu refuses or a command without a handler stops New
// with an error naming the command.
func TestCommandRegistrationRefused(t *testing.T) {
	run := func(context.Context, ext.Call) bool { return true }
	tests := []struct {
		name string
		cmd  ext.Command
		want string
	}{
		{"taken by the core", ext.Command{Name: "new", Description: "x", Run: run}, "/new registered twice"},
		{"not a menu name", ext.Command{Name: "Do-It", Description: "x", Run: run}, `"Do-It"`},
		{"no description", ext.Command{Name: "quiet", Run: run}, "/quiet: description of 0 characters"},
		{"no handler", ext.Command{Name: "idle", Description: "x"}, "/idle has no handler"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := newFakeStore()
			cfg := Config{Logger: zaptest.NewLogger(t), Features: []ext.Feature{commandFeature{name: "f", cmds: []ext.Command{tc.cmd}}}}
			_, err := New(cfg.WithDefaults(), st, newFakeCodex())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want an error with %q", err, tc.want)
			}
		})
	}
}

// TestCommandButtonsOnlyForCommandsThere: a button running a command the
// gateway lacks (its feature left out) is not offered.
func TestCommandButtonsOnlyForCommandsThere(t *testing.T) {
	h := newHost()
	h.commands.Add(CommandInfo{Name: "diff", Description: "Diff"}, func(context.Context, commandCall) bool { return true })
	got := h.commandButtons(commandButton("diff", "Diff"), commandButton("undo", "Undo"))
	if len(got) != 1 || got[0] != commandButton("diff", "Diff") {
		t.Errorf("buttons %+v, want Diff only", got)
	}
}
