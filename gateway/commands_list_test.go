package gateway

import (
	"regexp"
	"testing"
	"unicode/utf8"
)

// TestCommandsFitThePlatformsMenus: every command's name and description
// fit both menus' rules (Telegram setMyCommands: 1-32 of a-z 0-9 _,
// description 1-256; Discord slash commands: description 1-100), so
// registering the menu never fails for one long line.
func TestCommandsFitThePlatformsMenus(t *testing.T) {
	name := regexp.MustCompile(`^[a-z0-9_]{1,32}$`)
	seen := map[string]bool{}
	for _, c := range Commands {
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
}
