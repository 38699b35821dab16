package telegram

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxMessageUnits is Telegram's message length limit, in UTF-16 code units
// of the text after entity parsing.
const MaxMessageUnits = 4096

const fence = "```"

// utf16Len counts s in UTF-16 code units, the unit Telegram's limit uses.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if l := utf16.RuneLen(r); l > 0 {
			n += l
		} else {
			n++ // invalid UTF-8 arrives as U+FFFD, one unit
		}
	}
	return n
}

// SplitMessage splits markdown-ish text into chunks of at most limit UTF-16
// code units. It breaks at line ends where it can, else at a space, never
// inside a rune (so never inside a surrogate pair), and a ``` code block
// that crosses a chunk boundary is closed at the end of one chunk and
// reopened (with its language) at the start of the next, so every chunk
// renders as the code it is. Blank chunks are dropped.
func SplitMessage(text string, limit int) []string {
	if limit < 64 {
		limit = 64 // room for a reopened fence plus progress
	}
	s := &splitter{limit: limit}
	for _, line := range strings.Split(text, "\n") {
		s.addLine(line)
	}
	s.flush(false)
	return s.chunks
}

type splitter struct {
	limit   int
	chunks  []string
	cur     strings.Builder
	n       int    // UTF-16 units in cur
	lines   int    // lines in cur
	content bool   // cur holds more than a reopened fence
	open    string // the opening fence line while inside a code block
}

func isFenceLine(line string) bool {
	return strings.HasPrefix(strings.TrimSpace(line), fence)
}

// opener normalises an opening fence to "```lang" (bounded, so that a
// reopened fence never eats the chunk).
func opener(line string) string {
	lang := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), fence))
	if lang == "" || len(lang) > 32 || strings.ContainsAny(lang, " `") {
		return fence
	}
	return fence + lang
}

func (s *splitter) addLine(line string) {
	marker := isFenceLine(line)
	if marker && utf16Len(line)+1+len(fence) > s.limit {
		// A fence line longer than a chunk cannot be cut without breaking
		// the block it opens or closes. Only its fence and language count
		// (renderHTML shows nothing else of it), so it becomes opener's form.
		line = opener(line)
	}
	after := s.open
	switch {
	case marker && s.open == "":
		after = opener(line)
	case marker:
		after = ""
	}
	if s.fits(line, after) {
		s.append(line, after)
		return
	}
	if s.content {
		if marker && s.open != "" {
			// The closing fence that flush appends stands in for this line.
			s.flush(false)
			s.open = ""
			return
		}
		s.flush(s.open != "")
		if s.fits(line, after) {
			s.append(line, after)
			return
		}
	}
	s.hardSplit(line)
}

// fits reports whether line can join the current chunk while leaving room
// for the closing fence the chunk will need if a block is open after it.
func (s *splitter) fits(line, openAfter string) bool {
	need := utf16Len(line)
	if s.lines > 0 {
		need++
	}
	if openAfter != "" {
		need += 1 + len(fence)
	}
	return s.n+need <= s.limit
}

func (s *splitter) append(line, openAfter string) {
	if s.lines > 0 {
		s.cur.WriteByte('\n')
		s.n++
	}
	s.cur.WriteString(line)
	s.n += utf16Len(line)
	s.lines++
	s.content = true
	s.open = openAfter
}

// hardSplit cuts a line longer than a chunk, preferring the last space in
// the second half of the room, never inside a rune.
func (s *splitter) hardSplit(line string) {
	for line != "" {
		room := s.limit - s.n
		if s.lines > 0 {
			room--
		}
		if s.open != "" {
			room -= 1 + len(fence)
		}
		cut := prefixWithin(line, room)
		if cut < len(line) {
			if sp := strings.LastIndexByte(line[:cut], ' '); sp > 0 && utf16Len(line[:sp]) > room/2 {
				cut = sp + 1
			}
		}
		if cut == 0 {
			s.flush(s.open != "")
			continue
		}
		s.append(line[:cut], s.open)
		line = line[cut:]
		if line != "" {
			s.flush(s.open != "")
		}
	}
}

// prefixWithin returns the byte length of the longest rune-aligned prefix
// of line that fits in room UTF-16 units.
func prefixWithin(line string, room int) int {
	n := 0
	for i, r := range line {
		l := utf16.RuneLen(r)
		if l < 0 {
			l = 1
		}
		if n+l > room {
			return i
		}
		n += l
	}
	return len(line)
}

// flush ends the current chunk, closing an open code block; with reopen the
// next chunk starts inside the same block again.
func (s *splitter) flush(reopen bool) {
	if s.content {
		if s.open != "" {
			s.cur.WriteString("\n" + fence)
		}
		if chunk := s.cur.String(); strings.TrimSpace(chunk) != "" {
			s.chunks = append(s.chunks, chunk)
		}
	}
	s.cur.Reset()
	s.n, s.lines, s.content = 0, 0, false
	if reopen && s.open != "" {
		s.cur.WriteString(s.open)
		s.n, s.lines = utf16Len(s.open), 1
	}
}

// renderHTML turns one chunk into Telegram HTML: ``` blocks become <pre>
// (with <code class="language-x"> when a language is given), `spans`
// become <code>, and everything else is escaped, so the result always
// parses. Its visible text is never longer than the chunk.
func renderHTML(chunk string) string {
	var (
		b      strings.Builder
		inPre  bool
		hasTag bool // <code> inside <pre>
		needNL bool
	)
	for _, line := range strings.Split(chunk, "\n") {
		if isFenceLine(line) {
			if !inPre {
				if needNL {
					b.WriteByte('\n')
				}
				lang := strings.TrimPrefix(opener(line), fence)
				hasTag = lang != "" && validLang(lang)
				b.WriteString("<pre>")
				if hasTag {
					b.WriteString(`<code class="language-` + lang + `">`)
				}
				inPre, needNL = true, false
				continue
			}
			closePre(&b, hasTag)
			inPre, needNL = false, true
			continue
		}
		if needNL {
			b.WriteByte('\n')
		}
		if inPre {
			b.WriteString(escapeHTML(line))
		} else {
			writeInlineCode(&b, line)
		}
		needNL = true
	}
	if inPre {
		closePre(&b, hasTag)
	}
	return b.String()
}

func closePre(b *strings.Builder, hasCode bool) {
	if hasCode {
		b.WriteString("</code>")
	}
	b.WriteString("</pre>")
}

func validLang(lang string) bool {
	for _, r := range lang {
		ok := r == '_' || r == '-' || r == '+' || r == '#' || r == '.' ||
			r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
		if !ok {
			return false
		}
	}
	return true
}

// writeInlineCode renders `span` pairs of one line as <code>; an unpaired
// or empty span stays literal.
func writeInlineCode(b *strings.Builder, line string) {
	parts := strings.Split(line, "`")
	for i := 0; i < len(parts); i++ {
		switch {
		case i%2 == 0:
			b.WriteString(escapeHTML(parts[i]))
		case i == len(parts)-1:
			b.WriteString("`" + escapeHTML(parts[i]))
		case parts[i] == "":
			b.WriteString("``")
		default:
			b.WriteString("<code>" + escapeHTML(parts[i]) + "</code>")
		}
	}
}

// escapeHTML escapes exactly what Telegram's HTML parser requires.
func escapeHTML(s string) string {
	if !strings.ContainsAny(s, "<>&") && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch r {
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		case '&':
			b.WriteString("&amp;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}
