// Package title names lanes for the console's lane list by their first
// messages.
package title

import (
	"strings"
	"sync"
	"unicode"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
)

// A lane's title (meta "title") names it in the console's lane list. It is
// set once, from the first message that can give one: the name the
// platform sends with it (a Telegram group or forum topic, a Discord
// channel or thread), else the first line of the first message that is not
// a command. A title once set is kept, so a rename on the platform or a
// later message does not cost a write per message. The store sets it in
// the same commit that records the message (store.Inbound.LaneTitle).

// Once is the feature. It remembers the lanes this process saw named:
// their next messages pass no title, which spares the store reading and
// decoding the lane's meta on every message only to find the title there.
type Once struct{ keys sync.Map }

// New builds the feature.
func New() *Once { return &Once{} }

// Name is the feature's name.
func (*Once) Name() string { return "title" }

// Register makes it what names the lanes.
func (o *Once) Register(h ext.Host) error {
	h.Titles(o)
	return nil
}

// Title is the title to record with a message of lane key: "" once the
// lane is known to have one.
func (o *Once) Title(key string, in chat.Inbound) string {
	if _, ok := o.keys.Load(key); ok {
		return ""
	}
	return laneTitle(in)
}

// Recorded notes that the message of lane key carrying title was recorded:
// the lane has a title now, this one or an earlier one.
func (o *Once) Recorded(key, title string) {
	if title != "" {
		o.keys.Store(key, struct{}{})
	}
}

// maxTitleRunes is how much of a first line a title keeps.
const maxTitleRunes = 60

// laneTitle is the title in gives its lane, "" when it gives none.
func laneTitle(in chat.Inbound) string {
	if t := titleLine(in.Title); t != "" {
		return t
	}
	text := strings.TrimSpace(in.Text)
	if strings.HasPrefix(text, "/") {
		return "" // a command names nothing
	}
	first, _, _ := strings.Cut(text, "\n")
	return titleLine(first)
}

// titleLine makes s one tidy line of at most maxTitleRunes runes, cut at a word
// when one ends near the limit, with "…" when shortened.
func titleLine(s string) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }), " ")
	runes := []rune(s)
	if len(runes) <= maxTitleRunes {
		return s
	}
	cut := string(runes[:maxTitleRunes-1])
	if i := strings.LastIndex(cut, " "); i > maxTitleRunes/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ") + "…"
}
