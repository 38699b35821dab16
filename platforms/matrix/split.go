package matrix

import (
	"encoding/json"
	"strings"
	"unicode/utf8"
)

const (
	// maxContentBytes bounds one event's content as json.Marshal writes it.
	// The spec limits the whole federated event to 65,536 bytes; the
	// envelope (ids, hashes, signatures) takes 1-2 KiB, and Go's escaping of
	// < > & over-counts the canonical size, so this leaves a safe margin.
	maxContentBytes = 56 << 10
	// firstSplitBytes is the first budget of markdown source per part.
	firstSplitBytes = 16 << 10
	// minSplitBytes is the smallest budget: 2 KiB of the worst case
	// ("<&" escapes, ×15 once rendered and marshalled) still fits.
	minSplitBytes = 2 << 10
)

// splitBytes cuts text into pieces of at most limit bytes whose
// concatenation is text exactly: nothing added, nothing lost. It prefers
// to cut after a newline, then after a space, and never inside a rune.
func splitBytes(text string, limit int) []string {
	var parts []string
	for len(text) > limit {
		cut := cutPoint(text, limit)
		parts = append(parts, text[:cut])
		text = text[cut:]
	}
	if text != "" {
		parts = append(parts, text)
	}
	return parts
}

// cutPoint is where to end a piece of at most limit bytes of s (len(s) >
// limit): after the last newline in its second half, else after the last
// space there, else at the last rune boundary.
func cutPoint(s string, limit int) int {
	head := s[:limit]
	if i := strings.LastIndexByte(head, '\n'); i >= limit/2 {
		return i + 1
	}
	if i := strings.LastIndexByte(head, ' '); i >= limit/2 {
		return i + 1
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if cut == 0 { // cannot happen with limit >= 4; never return an empty piece
		_, size := utf8.DecodeRuneInString(s)
		return size
	}
	return cut
}

// splitMeasured splits text so that build(part) marshals to at most
// maxContentBytes for every part: first by source bytes, then any part
// still too large (markup that renders large) again with half the budget.
func splitMeasured(text string, build func(part string) any) []string {
	return splitWithin(text, firstSplitBytes, maxContentBytes, build)
}

func splitWithin(text string, budget, maxBytes int, build func(string) any) []string {
	var out []string
	for _, p := range splitBytes(text, budget) {
		if budget > minSplitBytes && measure(build(p)) > maxBytes {
			out = append(out, splitWithin(p, budget/2, maxBytes, build)...)
			continue
		}
		out = append(out, p)
	}
	return out
}

func measure(v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return maxContentBytes + 1
	}
	return len(b)
}

// previewPart cuts a streamed preview to one part: the final reply (Send
// with EditID) is the one split over several messages.
func previewPart(text string) string {
	if len(text) <= firstSplitBytes {
		return text
	}
	return text[:cutPoint(text, firstSplitBytes)] + "…"
}

// fenceState reports the code fence still open at the end of text,
// starting with open ("" none): the next part is rendered with it
// reopened, so a code block split over two messages renders as code in
// both (the plain body stays exactly the source).
func fenceState(open, text string) string {
	for _, line := range strings.Split(text, "\n") {
		t := strings.TrimSpace(line)
		if !strings.HasPrefix(t, "```") {
			continue
		}
		if open == "" {
			open = t
		} else if t == "```" {
			open = ""
		}
	}
	return open
}
