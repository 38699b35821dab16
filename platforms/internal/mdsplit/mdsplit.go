// Package mdsplit cuts Markdown into parts a chat platform accepts, each of
// at most a given number of runes, with code fences closed at a cut and
// reopened in the next part. Discord and Slack split with it; they differ
// only in the limit.
package mdsplit

import (
	"strings"
	"unicode/utf8"
)

// fenceClose ends a code block that a split interrupts.
const fenceClose = "\n```"

// maxFenceLine bounds the reopened fence line ("```lang"); a longer info
// string is reopened as a bare fence.
const maxFenceLine = 40

// Split cuts text into parts of at most limit runes. It prefers to cut at
// a newline, then at a space, and never inside a rune. A part that ends
// inside a code block closes the fence, and the next part reopens it with
// the same info string, so every part renders on its own. Whitespace-only
// parts are dropped (platforms reject empty messages).
func Split(text string, limit int) []string {
	var parts []string
	fence := "" // the open fence line ("```go") carried into the next part
	rest := text
	for rest != "" {
		prefix := ""
		if fence != "" {
			prefix = fence + "\n"
		}
		if utf8.RuneCountInString(prefix)+utf8.RuneCountInString(rest) <= limit {
			parts = appendPart(parts, prefix+rest)
			break
		}
		budget := limit - utf8.RuneCountInString(prefix)
		cut := cutPoint(rest, max(budget, 1))
		open := fenceAfter(fence, rest[:cut])
		if open != "" { // room for the closing fence
			cut = cutPoint(rest, max(budget-utf8.RuneCountInString(fenceClose), 1))
			open = fenceAfter(fence, rest[:cut])
		}
		piece := rest[:cut]
		rest = rest[cut:]
		fence = open
		part := prefix + piece
		if fence != "" {
			part = strings.TrimRight(part, "\n") + fenceClose
		}
		parts = appendPart(parts, part)
	}
	return parts
}

func appendPart(parts []string, part string) []string {
	if strings.TrimSpace(part) == "" {
		return parts
	}
	return append(parts, part)
}

// cutPoint returns a byte offset of at most budget runes into s: after the
// last newline in the second half of the window, else after the last space,
// else at the rune boundary.
func cutPoint(s string, budget int) int {
	end := len(s)
	n := 0
	for i := range s {
		if n == budget {
			end = i
			break
		}
		n++
	}
	window := s[:end]
	if i := strings.LastIndexByte(window, '\n'); i >= len(window)/2 {
		return i + 1
	}
	if i := strings.LastIndexByte(window, ' '); i >= len(window)/2 {
		return i + 1
	}
	return end
}

// fenceAfter tracks ``` fences through piece, starting from the open fence
// line (or "" outside a block), and returns the fence open at its end.
func fenceAfter(open, piece string) string {
	for line := range strings.Lines(piece) {
		trimmed := strings.TrimSpace(line)
		if !strings.HasPrefix(trimmed, "```") {
			continue
		}
		switch {
		case open != "":
			open = ""
		case len(trimmed) > maxFenceLine:
			open = "```"
		default:
			open = trimmed
		}
	}
	return open
}
