package gateway

import (
	"context"
	"strings"
	"unicode"
	"unicode/utf8"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"
)

// /retry runs the lane's turn to retry again: its newest turn cut off by a
// restart or stopped by codex.turn_timeout, kept in the store
// (store.RetryTurn) until a rerun of it is committed, however many other
// turns and restarts come between. On the API lane the cut-off notice is
// held for the lane's next request and arrives with that answer, so the
// turn to retry must not be "the last message". The notice quotes the
// message's first words, so the user knows which one /retry means.
//
//   - Only the newest counts: a later cut-off or timeout replaces it.
//   - Once a rerun is queued, another /retry says so instead of queuing a
//     second one (checked in the lane's section, lane.admit); once the
//     rerun is committed, whatever its status, there is nothing to retry.
//   - A rerun that is cut off or times out again is the turn to retry again.
//   - A rerun that does not get to run (a usage-limit pause requeues it, a
//     refused turn, a crash before it starts) leaves the turn to retry as
//     it was, so /retry still works.
//   - /new forgets it: a rerun belongs to the conversation it was cut from.

// Notices of /retry.
const (
	nothingToRetryNotice = "Nothing to retry in this conversation."
	retryLookupNotice    = "Could not look up what to retry (storage error). Please send /retry again."
)

// CutOffNotice is what a lane is told of its turn cut off by a restart
// whose message was text.
func CutOffNotice(text string) string {
	return "Your " + quotedRequest(text) + " was cut off by a restart; send /retry to run it again."
}

// autoRetryNotice is CutOffNotice when codex.auto_retry_cut_off reruns it.
func autoRetryNotice(text string) string {
	return "Your " + quotedRequest(text) + " was cut off by a restart; running it again."
}

// alreadyQueuedNotice answers a /retry while the rerun waits or runs.
func alreadyQueuedNotice(text string) string {
	return "Your " + quotedRequest(text) + " is already queued to run again."
}

// quotedRequest names a request by its first words: `request "…"`, or
// "previous request" when it has none to show.
func quotedRequest(text string) string {
	if q := firstWords(text); q != "" {
		return `request "` + q + `"`
	}
	return "previous request"
}

// Bounds of firstWords.
const (
	quoteWords = 8
	quoteRunes = 60
)

// firstWords is a short quote of a message safe to put in a notice: its
// first eight words or 60 characters, on one line (whitespace collapsed),
// with no control or formatting characters (no bidi overrides) and no
// backticks (which would open a code span on the platforms that render
// Markdown), and "…" where it was cut.
func firstWords(text string) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r == '`':
			return '\''
		case unicode.IsSpace(r):
			return ' '
		case unicode.IsControl(r), unicode.Is(unicode.Cf, r), r == utf8.RuneError:
			return -1
		}
		return r
	}, text)
	words := strings.Fields(clean)
	cut := len(words) > quoteWords
	if cut {
		words = words[:quoteWords]
	}
	q := strings.Join(words, " ")
	if utf8.RuneCountInString(q) > quoteRunes {
		q = strings.TrimSpace(string([]rune(q)[:quoteRunes]))
		cut = true
	}
	if cut && q != "" {
		q += "…"
	}
	return q
}

// retry queues the lane's turn to retry again, as the answer to the
// /retry message, or says there is none. The rerun is the /retry
// sender's turn: in a shared room they, or an admin, decide what it asks
// (whoever sent the message first may have left long ago).
func (c *controls) retry(ctx context.Context, call commandCall) {
	l, inboundID, msgID := call.lane, call.inboundID, call.msgID
	r, ok, err := c.st.RetryTurn(ctx, l.key)
	if err != nil {
		c.log.Warn("retry.lookup_failed", zap.String("lane", l.key), zap.Error(err))
		c.out.Notify(ctx, l.addr, msgID, retryLookupNotice)
		c.inbox.set(ctx, inboundID, store.InboundFailed)
		return
	}
	if !ok {
		c.out.Notify(ctx, l.addr, msgID, nothingToRetryNotice)
		c.inbox.set(ctx, inboundID, store.InboundDone)
		return
	}
	it := item{kind: itemTurn, inboundID: inboundID, msgID: msgID, text: r.Text, retries: &r,
		requester: call.sender, requesterName: call.senderName}
	if !c.sched.enqueueRetry(ctx, l, it) {
		c.out.Notify(ctx, l.addr, msgID, alreadyQueuedNotice(r.Text))
		c.inbox.set(ctx, inboundID, store.InboundDone)
		return
	}
	c.log.Info("retry.queued", zap.String("lane", l.key), zap.String("reason", r.Reason),
		zap.Int64("inbound", r.InboundID))
}
