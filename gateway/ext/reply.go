package ext

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// What a lane is told of Codex's answers and failures, in the same words
// wherever the core or a feature tells it.
const (
	// StoreErrorNotice answers a request the store could not save.
	StoreErrorNotice = "Sorry, I could not save this request (storage error). Please try again."
	// InterruptedSuffix ends the answer of an interrupted turn.
	InterruptedSuffix = "(interrupted)"
)

// ReplyText is what the user sees for a finished turn.
func ReplyText(res codex.TurnResult) string {
	text := strings.TrimSpace(res.Text)
	switch string(res.Status) {
	case "interrupted":
		if text == "" {
			return InterruptedSuffix
		}
		return text + "\n\n" + InterruptedSuffix
	case "failed":
		msg := "unknown error"
		if res.Error != nil && res.Error.Message != "" {
			msg = res.Error.Message
		}
		return "Codex turn failed: " + Brief(msg)
	}
	if text == "" {
		return "(Codex finished without a reply.)"
	}
	return text
}

// BriefError turns an error into a short message safe to show: sentinels
// get a fixed phrase; anything else is cut to its first line.
func BriefError(err error) string {
	switch {
	case errors.Is(err, codex.ErrTimeout):
		return "Codex did not answer in time."
	case errors.Is(err, codex.ErrProcessDied):
		return "the Codex process stopped (it is restarted automatically); please try again."
	case errors.Is(err, codex.ErrClosed):
		return "Codex is shutting down."
	case errors.Is(err, codex.ErrThreadNotLoaded):
		return "the Codex thread could not be loaded."
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "the request was cancelled."
	}
	return Brief(err.Error())
}

// Brief is s cut to its first line and 200 bytes.
func Brief(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// QuoteStart is text on one line, cut to max characters: the start of a
// message, for naming what it began.
func QuoteStart(text string, max int) string {
	text = strings.Join(strings.Fields(text), " ")
	if text == "" {
		return "no text"
	}
	if utf8.RuneCountInString(text) <= max {
		return text
	}
	r := []rune(text)
	return string(r[:max]) + "…"
}

// BriefCodexError is what a lane is told of a failed codex call: codex's
// own words when it answered with an error, else BriefError's.
func BriefCodexError(err error) string {
	var rpc *codex.RPCError
	if errors.As(err, &rpc) && rpc.Message != "" {
		return Brief(rpc.Message)
	}
	return BriefError(err)
}
