package discord

import (
	"strings"
	"testing"
	"unicode/utf8"
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
