package telegram

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
)

// FuzzSplitMessage holds SplitMessage and renderHTML to their promises on
// any text: every chunk within the limit in UTF-16 units, whole runes, each
// code block closed in the chunk that opened it, the content kept in order
// (modulo whitespace and the fences the splitter adds), and every chunk's
// HTML accepted by Telegram's rules (as the fake models them) with visible
// text no longer than the chunk.
func FuzzSplitMessage(f *testing.F) {
	for _, seed := range []string{
		"", "hello", "a\nb", strings.Repeat("word ", 40), strings.Repeat("😀", 70),
		"```go\n" + strings.Repeat("x := 1\n", 20) + "```\nafter",
		"```\nunclosed\n" + strings.Repeat("z\n", 30),
		"inline `code` and <b>tags</b> & ampersands",
		"```python\n" + strings.Repeat("y", 150) + "\n```",
		"a```b\n```",
	} {
		f.Add(seed, uint16(100))
	}
	f.Fuzz(func(t *testing.T, text string, limit uint16) {
		lim := max(int(limit)%(MaxMessageUnits+1), 64) // SplitMessage's floor
		chunks := SplitMessage(text, lim)
		var rebuilt []string
		for i, c := range chunks {
			checkChunk(t, text, c, i, lim)
			rebuilt = append(rebuilt, stripAddedFences(c))
		}
		got := strings.Join(strings.Fields(strings.Join(rebuilt, "")), "")
		want := strings.Join(strings.Fields(stripAddedFences(text)), "")
		if got != want {
			t.Fatalf("content changed or reordered:\n got %q\nwant %q", got, want)
		}
	})
}

func checkChunk(t *testing.T, text, c string, i, limit int) {
	t.Helper()
	if n := utf16Len(c); n > limit {
		t.Fatalf("chunk %d has %d UTF-16 units, limit %d", i, n, limit)
	}
	if utf8.ValidString(text) && !utf8.ValidString(c) {
		t.Fatalf("chunk %d cut a rune: %q", i, c)
	}
	if strings.TrimSpace(c) == "" {
		t.Fatalf("chunk %d is blank", i)
	}
	if n := fenceLines(c); n%2 != 0 {
		t.Fatalf("chunk %d leaves a code block open (%d fence lines): %q", i, n, c)
	}
	html := renderHTML(c)
	visible, err := telegramtest.ParseHTML(html)
	if err != nil {
		t.Fatalf("chunk %d renders to HTML Telegram rejects: %v\nchunk %q\nhtml  %q", i, err, c, html)
	}
	if utf16Len(visible) > utf16Len(c) {
		t.Fatalf("chunk %d: visible text %d units > chunk %d units", i, utf16Len(visible), utf16Len(c))
	}
	// The markup only takes away fence lines and span backticks: the rest
	// is shown as written, so the plain-text fallback says the same.
	if utf8.ValidString(c) && bareText(visible) != bareText(stripAddedFences(c)) {
		t.Fatalf("chunk %d: shown text differs from the chunk:\nshown %q\nchunk %q", i, visible, c)
	}
}

// bareText drops whitespace and backticks, which rendering may consume.
func bareText(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "`", "")), "")
}

func fenceLines(s string) int {
	n := 0
	for _, l := range strings.Split(s, "\n") {
		if isFenceLine(l) {
			n++
		}
	}
	return n
}

// Found by FuzzSplitMessage: a fence line longer than a chunk was cut like
// text, so its block was never closed and the splitter's idea of being
// inside a block parted from the renderer's.
func TestSplitOverlongFenceLine(t *testing.T) {
	for _, text := range []string{
		"```" + strings.Repeat("0", 58),
		"```" + strings.Repeat("0", 200) + "\ncode\n```\nafter the block",
		"```go\ncode\n```" + strings.Repeat(" x", 100) + "\nafter the block",
	} {
		chunks := SplitMessage(text, 64)
		for i, c := range chunks {
			checkChunk(t, text, c, i, 64)
		}
		last := chunks[len(chunks)-1]
		if strings.Contains(text, "after the block") && !strings.HasSuffix(last, "after the block") {
			t.Errorf("SplitMessage(%q): the text after the block is not last outside it: %q", text, chunks)
		}
		if html := renderHTML(last); strings.Contains(text, "after the block") && strings.HasSuffix(html, "</pre>") {
			t.Errorf("SplitMessage(%q): the text after the block renders inside it: %q", text, html)
		}
	}
}
