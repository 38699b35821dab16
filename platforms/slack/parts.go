package slack

import (
	"context"
	"errors"
	"strings"
	"sync"

	"github.com/slack-go/slack"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// partEventType names the metadata each part carries: Slack has no
// idempotency key, so a part's row and index are how a retry finds a
// post whose answer it never saw.
const partEventType = "gatewayd_part"

// partLookupLimit is the page size of a part's lookup, partLookupPages
// how many pages it reads at most.
const (
	partLookupLimit = 200
	partLookupPages = 10
)

func partMetadata(row int64, index int) slack.SlackMetadata {
	return slack.SlackMetadata{EventType: partEventType, EventPayload: map[string]any{"row": row, "part": index}}
}

// partLog remembers the parts whose post failed ambiguously in this
// process (the request may have reached Slack), so their retry looks
// them up first.
type partLog struct {
	mu  sync.Mutex
	set map[[2]int64]bool
}

const maxAmbiguous = 1000

func newPartLog() *partLog { return &partLog{set: map[[2]int64]bool{}} }

func (l *partLog) markAmbiguous(row int64, index int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.set) >= maxAmbiguous {
		clear(l.set) // a crude bound: a lookup skipped is the no-nonce window
	}
	l.set[[2]int64{row, int64(index)}] = true
}

func (l *partLog) ambiguous(row int64, index int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.set[[2]int64{row, int64(index)}]
}

// ambiguousFailure: the post may have been created although we saw no
// answer (a timeout, a dropped connection, a 5xx); a refusal or a 429 is
// an answer.
func ambiguousFailure(ctx context.Context, err error) bool {
	var ra *gateway.RetryAfterError
	if errors.As(err, &ra) || errors.Is(err, gateway.ErrPermanent) || slackCode(err) != "" {
		return false
	}
	return ctx.Err() == nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled)
}

// findPart looks for part p of out among the lane's messages after
// partLookupStart: a post of ours whose metadata names the same row and
// index. A failed lookup says not found; the part is then posted (the
// window every platform without a nonce has).
func (a *Adapter) findPart(ctx context.Context, out gateway.Outbound, p part) (string, bool) {
	bot := a.identity()
	mine := func(m slack.Message) bool {
		return m.Metadata.EventType == partEventType && (bot.BotID == "" || m.BotID == bot.BotID) &&
			number(m.Metadata.EventPayload["row"]) == out.ID && number(m.Metadata.EventPayload["part"]) == int64(p.index)
	}
	ts, found, err := a.scanLane(ctx, p.channel, p.thread, partLookupStart(out, p), mine)
	if err != nil {
		a.log.Warn("slack.part_lookup_failed", zap.Int64("outbox_id", out.ID), zap.Error(err))
		return "", false
	}
	if found {
		a.log.Info("slack.part_found: not posting it again", zap.Int64("outbox_id", out.ID),
			zap.Int("part", p.index), zap.String("ts", ts))
	}
	return ts, found
}

// partLookupStart is the ts a part was posted after: the part before it,
// else the message it answers, else its thread's root ("" for any).
// Starting there, not at the lane's start, keeps a long thread's later
// posts within reach.
func partLookupStart(out gateway.Outbound, p part) string {
	if p.after != "" {
		return p.after
	}
	if ch, ts, ok := strings.Cut(out.InReplyTo, ":"); ok && ch == p.channel {
		if _, err := tsMicros(ts); err == nil {
			return ts
		}
	}
	return p.thread
}

// scanLane reads the lane's messages after the ts after, with their
// metadata, a page at a time (at most partLookupPages), until match
// holds for one; it returns that message's ts.
func (a *Adapter) scanLane(ctx context.Context, channel, thread, after string, match func(slack.Message) bool) (string, bool, error) {
	cursor := ""
	for range partLookupPages {
		msgs, next, err := a.lanePage(ctx, channel, thread, after, cursor)
		if err != nil {
			return "", false, err
		}
		for _, m := range msgs {
			if match(m) {
				return m.Timestamp, true, nil
			}
		}
		if next == "" {
			return "", false, nil
		}
		cursor = next
	}
	return "", false, nil
}

// lanePage is one page of the lane's messages after the ts after.
func (a *Adapter) lanePage(ctx context.Context, channel, thread, after, cursor string) ([]slack.Message, string, error) {
	var (
		msgs []slack.Message
		next string
	)
	if thread != "" {
		err := a.call(ctx, "conversations.replies", func(ctx context.Context) error {
			var err error
			msgs, _, next, err = a.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
				ChannelID: channel, Timestamp: thread, Oldest: after, Cursor: cursor, Limit: partLookupLimit,
				IncludeAllMetadata: true})
			return err
		})
		return msgs, next, err
	}
	err := a.call(ctx, "conversations.history", func(ctx context.Context) error {
		resp, err := a.api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
			ChannelID: channel, Oldest: after, Cursor: cursor, Limit: partLookupLimit, IncludeAllMetadata: true})
		if resp != nil {
			msgs, next = resp.Messages, resp.ResponseMetaData.NextCursor
		}
		return err
	})
	return msgs, next, err
}

// number reads a JSON number of the metadata payload.
func number(v any) int64 {
	switch n := v.(type) {
	case float64:
		return int64(n)
	case int64:
		return n
	case int:
		return int64(n)
	}
	return -1
}
