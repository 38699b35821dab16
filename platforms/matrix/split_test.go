package matrix

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitBytesKeepsEveryCharacter(t *testing.T) {
	tests := []struct {
		name  string
		text  string
		limit int
		parts int
	}{
		{"short", "hello", 10, 1},
		{"newline preferred", strings.Repeat("a", 6) + "\n" + strings.Repeat("b", 6), 10, 2},
		{"runes not cut", strings.Repeat("é", 20), 7, 7},
		{"empty", "", 10, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := splitBytes(tt.text, tt.limit)
			if strings.Join(got, "") != tt.text || len(got) != tt.parts {
				t.Fatalf("splitBytes = %q, want %d parts rejoining to the input", got, tt.parts)
			}
			for _, p := range got {
				if len(p) > tt.limit || !utf8.ValidString(p) {
					t.Fatalf("part %q over %d bytes or cut inside a rune", p, tt.limit)
				}
			}
		})
	}
}

func TestLongReplyIsSplitUnderTheEventLimit(t *testing.T) {
	text := strings.Repeat("<&\"", 30000) + "\n" + strings.Repeat("日本語 ", 20000)
	parts := splitMeasured(text, func(p string) any { return textContent(p, "", false, "") })
	if strings.Join(parts, "") != text {
		t.Fatal("parts do not rejoin to the input")
	}
	for i, p := range parts {
		if n := measure(textContent(p, "", false, "")); n > maxContentBytes {
			t.Fatalf("part %d marshals to %d bytes, over %d", i, n, maxContentBytes)
		}
	}
	if len(parts) < 3 {
		t.Fatalf("%d parts for %d bytes of escaping-heavy text; want a split", len(parts), len(text))
	}
}

// FuzzSplit: the parts of any text rejoin to it, each within the limit and
// valid UTF-8 when the input is.
func FuzzSplit(f *testing.F) {
	f.Add("hello world\nsecond line", 8)
	f.Add(strings.Repeat("é", 40), 5)
	f.Add("```go\ncode\n```\n", 4)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		limit = 4 + int(uint(limit)%200)
		parts := splitBytes(text, limit)
		if strings.Join(parts, "") != text {
			t.Fatalf("splitBytes(%q, %d) = %q: does not rejoin", text, limit, parts)
		}
		for _, p := range parts {
			if len(p) > limit || p == "" {
				t.Fatalf("part %q: %d bytes, limit %d", p, len(p), limit)
			}
			if utf8.ValidString(text) && !utf8.ValidString(p) {
				t.Fatalf("part %q cuts a rune", p)
			}
		}
	})
}
