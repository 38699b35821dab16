package slack

import (
	"context"
	"errors"
	"sync"

	"github.com/slack-go/slack"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// partEventType names the metadata each part carries: Slack has no
// idempotency key, so a part's row and index are how a retry finds a
// post whose answer it never saw.
const partEventType = "gatewayd_part"

// partLookupLimit is how many recent messages of a lane are searched.
const partLookupLimit = 100

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

// findPart looks for part p of out among the lane's recent messages: a
// post of ours whose metadata names the same row and index. A failed
// lookup says not found; the part is then posted (the window every
// platform without a nonce has).
func (a *Adapter) findPart(ctx context.Context, out gateway.Outbound, p part) (string, bool) {
	msgs, err := a.recent(ctx, p.channel, p.thread, p.after)
	if err != nil {
		a.log.Warn("slack.part_lookup_failed", zap.Int64("outbox_id", out.ID), zap.Error(err))
		return "", false
	}
	bot := a.identity()
	for _, m := range msgs {
		if m.Metadata.EventType == partEventType && (bot.BotID == "" || m.BotID == bot.BotID) &&
			number(m.Metadata.EventPayload["row"]) == out.ID && number(m.Metadata.EventPayload["part"]) == int64(p.index) {
			a.log.Info("slack.part_found: not posting it again", zap.Int64("outbox_id", out.ID),
				zap.Int("part", p.index), zap.String("ts", m.Timestamp))
			return m.Timestamp, true
		}
	}
	return "", false
}

// recent is the lane's messages after the ts after ("" for any), with
// their metadata.
func (a *Adapter) recent(ctx context.Context, channel, thread, after string) ([]slack.Message, error) {
	var msgs []slack.Message
	if thread != "" {
		err := a.call(ctx, "conversations.replies", func(ctx context.Context) error {
			var err error
			msgs, _, _, err = a.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
				ChannelID: channel, Timestamp: thread, Oldest: after, Limit: partLookupLimit, IncludeAllMetadata: true})
			return err
		})
		return msgs, err
	}
	err := a.call(ctx, "conversations.history", func(ctx context.Context) error {
		resp, err := a.api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
			ChannelID: channel, Oldest: after, Limit: partLookupLimit, IncludeAllMetadata: true})
		if resp != nil {
			msgs = resp.Messages
		}
		return err
	})
	return msgs, err
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
