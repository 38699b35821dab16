package discord

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
)

// FuzzSplitMessage holds splitMessage to its promises on any text: every
// part within the limit in runes, whole runes, no part leaving a code block
// open, and the content kept in order (modulo whitespace and the fences the
// splitter adds); without fences the parts rejoin to the text exactly.
func FuzzSplitMessage(f *testing.F) {
	for _, seed := range []string{
		"", "hello", strings.Repeat("abcdefghi\n", 30), strings.Repeat("x", 250),
		strings.Repeat("🙂é", 120), "intro\n```go\n" + strings.Repeat("fmt.Println(1)\n", 20) + "```\noutro",
		"```" + strings.Repeat("l", 50) + "\n" + strings.Repeat("code\n", 40), "a```b\n```c",
	} {
		f.Add(seed, uint16(100))
	}
	f.Fuzz(func(t *testing.T, text string, limit uint16) {
		// Room for a reopened fence line and its close, as the real limit has.
		lim := max(int(limit)%(maxMessageRunes+1), 2*maxFenceLine)
		parts := splitMessage(text, lim)
		var rebuilt []string
		for i, p := range parts {
			if n := utf8.RuneCountInString(p); n > lim {
				t.Fatalf("part %d has %d runes, limit %d", i, n, lim)
			}
			if utf8.ValidString(text) && !utf8.ValidString(p) {
				t.Fatalf("part %d cut a rune: %q", i, p)
			}
			if strings.TrimSpace(p) == "" {
				t.Fatalf("part %d is blank", i)
			}
			if n := fenceLines(p); n%2 != 0 && fenceLines(text)%2 == 0 {
				t.Fatalf("part %d leaves a code block open (%d fence lines): %q", i, n, p)
			}
			rebuilt = append(rebuilt, withoutFenceLines(p))
		}
		got := strings.Join(strings.Fields(strings.Join(rebuilt, "")), "")
		want := strings.Join(strings.Fields(withoutFenceLines(text)), "")
		if got != want {
			t.Fatalf("content changed or reordered:\n got %q\nwant %q", got, want)
		}
		if fenceLines(text) == 0 && strings.TrimSpace(text) != "" && utf8.ValidString(text) {
			if joined := strings.Join(parts, ""); strings.TrimSpace(joined) != strings.TrimSpace(text) {
				t.Fatalf("parts do not rejoin to the text:\n got %q\nwant %q", joined, text)
			}
		}
	})
}

func fenceLines(s string) int {
	n := 0
	for line := range strings.Lines(s) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			n++
		}
	}
	return n
}

func withoutFenceLines(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		if !strings.HasPrefix(strings.TrimSpace(line), "```") {
			b.WriteString(line)
		}
	}
	return b.String()
}

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
