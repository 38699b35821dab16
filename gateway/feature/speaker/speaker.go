// Package speaker frames a message's text with who said it and what it
// replies to, so Codex can tell the people of a shared room apart.
package speaker

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
)

// In a shared room Codex must tell Ana's request from Ben's correction and
// see what "do it like she said above" points at. So a message's
// text is framed before it is recorded — the transcript, the journal and a
// rerun after a restart all hold what Codex was given:
//   - in group places (Telegram groups and topics, Discord channels and
//     threads) it starts with its author, "[Ana]: …"; private chats and
//     the API lane are one person's and unchanged;
//   - a reply carries the message it replies to, its author and first
//     quoteMax characters, on a line before it, the bot's own answers too.
//
// Commands are never framed: "/new" must stay a command.

// quoteMax is how much of a replied-to message the turn carries.
const quoteMax = 300

// Speaker is the feature.
type Speaker struct{}

// New builds the feature.
func New() *Speaker { return &Speaker{} }

// Name is the feature's name.
func (*Speaker) Name() string { return "speaker" }

// Register frames every message's text.
func (*Speaker) Register(h ext.Host) error {
	h.OnText(func(_ context.Context, in chat.Inbound, text string) string {
		return Framed(in, text, h.IsCommand)
	})
	return nil
}

// Framed is text, the text of in, as Codex gets it; isCommand knows
// which words are commands.
func Framed(in chat.Inbound, text string, isCommand func(text string) bool) string {
	if text == "" {
		return text // files only: the file list is the message
	}
	if isCommand(text) {
		return text
	}
	if ext.GroupPlace(in.Address.Kind) {
		text = "[" + ext.SpeakerName(in) + "]: " + text
	}
	if q := in.Quote; q != nil && strings.TrimSpace(q.Text) != "" {
		text = quoteLine(q) + "\n" + text
	}
	return text
}

// quoteLine is the reply's context line.
func quoteLine(q *chat.Quote) string {
	who := "your earlier answer"
	if !q.FromBot {
		who = strings.Join(strings.Fields(q.Author), " ")
		if who == "" {
			who = "an earlier message"
		}
	}
	text := strings.Join(strings.Fields(q.Text), " ")
	if utf8.RuneCountInString(text) > quoteMax {
		text = string([]rune(text)[:quoteMax]) + "…"
	}
	return "(replying to " + who + `: "` + text + `")`
}
