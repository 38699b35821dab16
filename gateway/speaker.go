package gateway

import (
	"strings"
	"unicode/utf8"

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

// framedText is in's text as Codex gets it; cmds knows which words are
// commands.
func framedText(in Inbound, cmds *commandSet) string {
	text := in.Text
	if text == "" {
		return text // files only: the file list is the message
	}
	if _, isCommand := cmds.parseCommand(text); isCommand {
		return text
	}
	if isGroupPlace(in.Address.Kind) {
		text = "[" + speakerName(in) + "]: " + text
	}
	if q := in.Quote; q != nil && strings.TrimSpace(q.Text) != "" {
		text = quoteLine(q) + "\n" + text
	}
	return text
}

func isGroupPlace(k LaneKind) bool { return ext.GroupPlace(k) }

// speakerName is the sender's shown name without the characters that
// would let a name fake the frame ("]:", newlines).
func speakerName(in Inbound) string {
	name := in.DisplayName
	if name == "" {
		name = in.SenderName
	}
	if name == "" {
		name = in.SenderID
	}
	name = strings.Join(strings.Fields(strings.NewReplacer("[", "(", "]", ")").Replace(name)), " ")
	if name == "" {
		return "someone"
	}
	return name
}

// quoteLine is the reply's context line.
func quoteLine(q *Quote) string {
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
