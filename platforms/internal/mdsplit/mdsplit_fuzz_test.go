package mdsplit

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// FuzzSplit holds splitMessage to its promises on any text: every
// part within the limit in runes, whole runes, no part leaving a code
// block open, the content kept in order; and the parts rejoin to the text
// exactly when it has no fence (whose close and reopen the splitter adds)
// and no run of whitespace long enough to make a part of its own (a blank
// part is dropped: platforms refuse an empty message).
func FuzzSplit(f *testing.F) {
	for _, seed := range []string{
		"", "hello", strings.Repeat("abcdefghi\n", 30), strings.Repeat("x", 250), "  padded  ",
		strings.Repeat("🙂é", 120), "intro\n```go\n" + strings.Repeat("fmt.Println(1)\n", 20) + "```\noutro",
		"```" + strings.Repeat("l", 50) + "\n" + strings.Repeat("code\n", 40), "a```b\n```c",
		strings.Repeat("word ", 1000) + "\n\n" + strings.Repeat("more words\n", 500),
		" ```" + strings.Repeat("0", 97),
	} {
		f.Add(seed, uint16(100))
	}
	f.Fuzz(func(t *testing.T, text string, limit uint16) {
		lim := max(int(limit)%(fuzzMaxLimit+1), 2*maxFenceLine)
		if longestFenceLine(text) > lim/2 {
			// A fence line longer than a part is cut like text, and the
			// oracle below (which drops fence lines) cannot follow it.
			return
		}
		parts := Split(text, lim)
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
		if fenceLines(text) == 0 && strings.TrimSpace(text) != "" && utf8.ValidString(text) &&
			longestSpaceRun(text) < lim/2 {
			if joined := strings.Join(parts, ""); joined != text {
				t.Fatalf("parts do not rejoin to the text:\n got %q\nwant %q", joined, text)
			}
		}
	})
}

func longestFenceLine(s string) int {
	n := 0
	for line := range strings.Lines(s) {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			n = max(n, utf8.RuneCountInString(line))
		}
	}
	return n
}

func longestSpaceRun(s string) int {
	best, run := 0, 0
	for _, r := range s {
		if unicode.IsSpace(r) {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
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

// fuzzMaxLimit is the largest limit fuzzed: Slack's part (Discord's
// 2,000 and the smaller limits are below it).
const fuzzMaxLimit = 3000
