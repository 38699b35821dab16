package discord

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// FuzzThreadName: the name of an auto-created thread, from any message
// text and user name, is what Discord accepts (1-100 characters) on one
// line, and it is the message's own words when it has any.
func FuzzThreadName(f *testing.F) {
	for _, seed := range []string{"", "  \n\t", "fix the build", strings.Repeat("word ", 40), strings.Repeat("🙂", 90), "a\nb\rc"} {
		f.Add(seed, "alice")
	}
	f.Fuzz(func(t *testing.T, text, user string) {
		if n := utf8.RuneCountInString(user); n < 2 || n > 32 {
			return // Discord user names are 2-32 characters
		}
		name := threadName(text, &discordgo.User{Username: user})
		if n := utf8.RuneCountInString(name); n == 0 || n > 100 {
			t.Fatalf("threadName(%q) = %q: %d characters", text, name, n)
		}
		if strings.ContainsAny(name, "\n\r") && !strings.ContainsAny(user, "\n\r") {
			t.Fatalf("threadName(%q) = %q spans lines", text, name)
		}
		words := strings.Join(strings.Fields(text), " ")
		if words != "" && utf8.ValidString(text) && !strings.HasPrefix(words, strings.TrimSuffix(name, "…")) {
			t.Fatalf("threadName(%q) = %q, not the message's words", text, name)
		}
	})
}
