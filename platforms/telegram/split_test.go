package telegram

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplitMessage(t *testing.T) {
	const limit = 100
	tests := []struct {
		name   string
		text   string
		chunks int // -1: don't check the count
	}{
		{name: "empty", text: "", chunks: 0},
		{name: "blank", text: "\n \n", chunks: 0},
		{name: "short", text: "hello", chunks: 1},
		{name: "exactly the limit", text: strings.Repeat("a", limit), chunks: 1},
		{name: "one over", text: strings.Repeat("a", limit+1), chunks: 2},
		{name: "emoji at the boundary", text: strings.Repeat("a", limit-1) + "😀😀", chunks: 2},
		{name: "only emoji", text: strings.Repeat("😀", 120), chunks: 3},
		{name: "lines", text: strings.Repeat("0123456789 abcdefghij\n", 20), chunks: -1},
		{name: "long words", text: strings.Repeat("word ", 100), chunks: -1},
		{name: "code block across chunks", text: "intro\n```go\n" + strings.Repeat("fmt.Println(\"x\")\n", 20) + "```\nafter", chunks: -1},
		{name: "closing fence exactly at the limit", text: "```\n" + strings.Repeat("x", limit-8) + "\n```\ntail", chunks: -1},
		{name: "long line inside code", text: "```sh\n" + strings.Repeat("y", 350) + "\n```", chunks: -1},
		{name: "unclosed fence", text: "```\n" + strings.Repeat("z\n", 120), chunks: -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks := SplitMessage(tt.text, limit)
			if tt.chunks >= 0 && len(chunks) != tt.chunks {
				t.Fatalf("%d chunks, want %d: %q", len(chunks), tt.chunks, chunks)
			}
			var rebuilt []string
			for i, c := range chunks {
				if n := utf16Len(c); n > limit {
					t.Fatalf("chunk %d has %d units", i, n)
				}
				if !utf8.ValidString(c) {
					t.Fatalf("chunk %d cut a rune: %q", i, c)
				}
				if strings.Count(c, "```")%2 != 0 && !strings.Contains(tt.name, "unclosed") {
					t.Fatalf("chunk %d leaves a code block open: %q", i, c)
				}
				rebuilt = append(rebuilt, stripAddedFences(c))
			}
			if got, want := strings.Join(strings.Fields(strings.Join(rebuilt, "")), ""), strings.Join(strings.Fields(stripAddedFences(tt.text)), ""); got != want {
				t.Fatalf("content changed:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// stripAddedFences removes fence lines, so content can be compared
// regardless of the fences the splitter closed and reopened.
func stripAddedFences(s string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if !isFenceLine(l) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

func TestSplitReopensCodeBlockWithItsLanguage(t *testing.T) {
	text := "```python\n" + strings.Repeat("print(1)\n", 30) + "```"
	chunks := SplitMessage(text, 100)
	if len(chunks) < 2 {
		t.Fatalf("want several chunks, got %d", len(chunks))
	}
	for i, c := range chunks {
		if !strings.HasPrefix(c, "```python\n") || !strings.HasSuffix(c, "\n```") {
			t.Fatalf("chunk %d is not a complete python block: %q", i, c)
		}
	}
}

func TestRenderHTMLVisibleLengthNeverGrows(t *testing.T) {
	for _, chunk := range SplitMessage(longReply(), MaxMessageUnits) {
		html := renderHTML(chunk)
		visible := strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(
			stripTags(html))
		if utf16Len(visible) > utf16Len(chunk) {
			t.Fatalf("visible %d units > chunk %d units", utf16Len(visible), utf16Len(chunk))
		}
	}
}

func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>' && in:
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func BenchmarkSplitMessage(b *testing.B) {
	text := longReply()
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range SplitMessage(text, MaxMessageUnits) {
			_ = renderHTML(c)
		}
	}
}
