package codex

import (
	"bytes"
	"unicode/utf8"
)

// decodeDeltaLine is the fast path of decodeTurnLine for the line a turn
// gets most of, item/agentMessage/delta (one per streamed token or word):
//
//	{"method":"item/agentMessage/delta","params":{"threadId":…,"turnId":…,"itemId":…,"delta":…},"emittedAtMs":…}
//
// encoding/json spends about 2.5 µs and 11 allocations on one; this reads
// it in one pass with four. It accepts only lines of that shape that it can
// read exactly as encoding/json does (FuzzDeltaLine checks that): string
// params without \u escapes, valid UTF-8, keys spelled exactly, top-level
// values that are strings, numbers or the params object. Anything else
// returns false and takes the encoding/json path, which also reports a
// malformed line.
func decodeDeltaLine(line []byte) (*turnEvent, bool) {
	p := deltaParser{b: line}
	e := &turnEvent{}
	p.ws()
	if !p.byte('{') {
		return nil, false
	}
	sawParams := false
	for first := true; ; first = false {
		p.ws()
		if p.byte('}') {
			break
		}
		if !first && !p.byte(',') {
			return nil, false
		}
		p.ws()
		key, ok := p.str() // decoded as encoding/json decodes a key
		if !ok || !p.colon() {
			return nil, false
		}
		switch {
		case string(key) == "params":
			if !p.params(e) {
				return nil, false
			}
			sawParams = true
		case bytes.EqualFold(key, []byte("params")):
			return nil, false // encoding/json matches keys case-insensitively
		default:
			if !p.scalar() {
				return nil, false
			}
		}
	}
	p.ws()
	return e, sawParams && p.i == len(p.b)
}

type deltaParser struct {
	b []byte
	i int
}

func (p *deltaParser) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *deltaParser) byte(c byte) bool {
	if p.i < len(p.b) && p.b[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *deltaParser) colon() bool {
	p.ws()
	ok := p.byte(':')
	p.ws()
	return ok
}

// params reads the params object into e: its members must all be strings.
// A later duplicate key wins, as in encoding/json.
func (p *deltaParser) params(e *turnEvent) bool {
	if !p.byte('{') {
		return false
	}
	for first := true; ; first = false {
		p.ws()
		if p.byte('}') {
			return true
		}
		if !first && !p.byte(',') {
			return false
		}
		p.ws()
		key, ok := p.str() // decoded as encoding/json decodes a key
		if !ok || !p.colon() {
			return false
		}
		val, ok := p.str()
		if !ok {
			return false
		}
		switch string(key) {
		case "threadId":
			e.ThreadID = string(val)
		case "turnId":
			e.TurnID = string(val)
		case "delta":
			e.Delta = string(val)
		default:
			if foldsToDeltaField(key) {
				return false // a differently spelled field encoding/json would fill
			}
		}
	}
}

// foldsToDeltaField says whether key matches a field of agentDelta (what
// the encoding/json path decodes a delta's params into) the way
// encoding/json matches names, case-insensitively, without being spelled
// as the fast path reads it.
func foldsToDeltaField(key []byte) bool {
	for _, f := range [...]string{"threadId", "turnId", "delta"} {
		if bytes.EqualFold(key, []byte(f)) {
			return true
		}
	}
	return false
}

// str reads a string (a key or a value), decoding the escapes serde_json writes for
// text (\" \\ \/ \b \f \n \r \t); \u escapes and invalid UTF-8, which
// encoding/json would rewrite, are left to it. Without escapes the value
// is the line's own bytes: the caller copies what it keeps.
func (p *deltaParser) str() ([]byte, bool) {
	if !p.byte('"') {
		return nil, false
	}
	start := p.i
	var buf []byte // nil until the first escape
	for p.i < len(p.b) {
		c := p.b[p.i]
		switch {
		case c == '"':
			seg := p.b[start:p.i]
			p.i++
			if !utf8.Valid(seg) {
				return nil, false
			}
			if buf == nil {
				return seg, true
			}
			return append(buf, seg...), true
		case c < 0x20:
			return nil, false
		case c == '\\':
			if p.i+1 >= len(p.b) {
				return nil, false
			}
			seg := p.b[start:p.i]
			if !utf8.Valid(seg) {
				return nil, false
			}
			r, ok := simpleEscape(p.b[p.i+1])
			if !ok {
				return nil, false
			}
			buf = append(append(buf, seg...), r)
			p.i += 2
			start = p.i
			continue
		}
		p.i++
	}
	return nil, false
}

func simpleEscape(c byte) (byte, bool) {
	switch c {
	case '"', '\\', '/':
		return c, true
	case 'b':
		return '\b', true
	case 'f':
		return '\f', true
	case 'n':
		return '\n', true
	case 'r':
		return '\r', true
	case 't':
		return '\t', true
	}
	return 0, false
}

// scalar skips a top-level value other than params: a string or a number.
func (p *deltaParser) scalar() bool {
	if p.i < len(p.b) && p.b[p.i] == '"' {
		_, ok := p.str()
		return ok
	}
	return p.number()
}

// number skips a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *deltaParser) number() bool {
	p.byte('-')
	switch {
	case p.byte('0'):
	case p.i < len(p.b) && p.b[p.i] >= '1' && p.b[p.i] <= '9':
		p.digits()
	default:
		return false
	}
	if p.byte('.') && !p.digits() {
		return false
	}
	if p.byte('e') || p.byte('E') {
		if !p.byte('+') {
			p.byte('-')
		}
		if !p.digits() {
			return false
		}
	}
	return true
}

func (p *deltaParser) digits() bool {
	start := p.i
	for p.i < len(p.b) && p.b[p.i] >= '0' && p.b[p.i] <= '9' {
		p.i++
	}
	return p.i > start
}
