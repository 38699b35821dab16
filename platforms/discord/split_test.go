package discord

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitMessage(t *testing.T) {
	t.Parallel()
	code := "intro\n```go\n" + strings.Repeat("fmt.Println(\"x\")\n", 300) + "```\noutro"
	for _, tc := range []struct {
		name      string
		text      string
		limit     int
		wantParts int  // 0: don't check
		rejoins   bool // parts concatenate to the text (no fences added)
	}{
		{name: "short", text: "hello", limit: 2000, wantParts: 1, rejoins: true},
		{name: "empty", text: "  \n", limit: 2000, wantParts: 0, rejoins: false},
		{name: "6000 ascii lines", text: strings.Repeat("abcdefghi\n", 600), limit: 2000, wantParts: 3, rejoins: true},
		{name: "no spaces", text: strings.Repeat("x", 4500), limit: 2000, wantParts: 3, rejoins: true},
		{name: "multi-byte runes", text: strings.Repeat("🙂é", 3000), limit: 2000, wantParts: 3, rejoins: true},
		{name: "code block across parts", text: code, limit: 2000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts := splitMessage(tc.text, tc.limit)
			if tc.wantParts > 0 && len(parts) != tc.wantParts {
				t.Errorf("%d parts, want %d", len(parts), tc.wantParts)
			}
			for i, p := range parts {
				if n := utf8.RuneCountInString(p); n > tc.limit {
					t.Errorf("part %d has %d runes", i, n)
				}
				if !utf8.ValidString(p) {
					t.Errorf("part %d is not valid UTF-8", i)
				}
				if strings.Count(p, "```")%2 != 0 {
					t.Errorf("part %d has an unbalanced fence:\n%s", i, p)
				}
			}
			if tc.rejoins && strings.Join(parts, "") != tc.text {
				t.Error("parts do not rejoin to the text")
			}
		})
	}
}

func TestSplitMessageReopensFenceWithLanguage(t *testing.T) {
	t.Parallel()
	text := "```python\n" + strings.Repeat("print(1)\n", 400) + "```"
	parts := splitMessage(text, 2000)
	if len(parts) < 2 {
		t.Fatalf("%d parts", len(parts))
	}
	for i, p := range parts[1:] {
		if !strings.HasPrefix(p, "```python\n") {
			t.Errorf("part %d does not reopen the block: %q", i+1, p[:20])
		}
	}
	for i, p := range parts[:len(parts)-1] {
		if !strings.HasSuffix(p, "\n```") {
			t.Errorf("part %d does not close the block", i)
		}
	}
	// Removing the added fences gives back the code.
	var b strings.Builder
	for i, p := range parts {
		if i > 0 {
			p = strings.TrimPrefix(p, "```python\n")
		}
		if i < len(parts)-1 {
			p = strings.TrimSuffix(p, "\n```")
		}
		b.WriteString(p)
	}
	if strings.ReplaceAll(b.String(), "\n", "") != strings.ReplaceAll(text, "\n", "") {
		t.Error("content changed by the split")
	}
}

func BenchmarkSplitMessage(b *testing.B) {
	text := "```go\n" + strings.Repeat("fmt.Println(\"héllo 🙂\")\n", 2000) + "```"
	b.ReportAllocs()
	for b.Loop() {
		splitMessage(text, maxMessageRunes)
	}
}
