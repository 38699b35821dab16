package slack

import (
	"context"
	"errors"
	"sort"
	"strings"

	"github.com/slack-go/slack"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// historyPage is the page size asked of conversations.replies/history.
const historyPage = 200

// maxBackfillLanes bounds the lanes one reconnect reads back (the most
// recently seen first): each costs a rate-limited history call.
const maxBackfillLanes = 100

// startBackfill runs on every connection (on the worker): it reads back
// what each indexed lane missed on a goroutine of its own, replacing one
// still running from an earlier connection. The worker only delivers
// what was read, a lane at a time, so live events run between lanes
// instead of waiting for every history call.
func (a *Adapter) startBackfill(ctx context.Context) {
	if a.cancelBackfill != nil {
		a.cancelBackfill()
	}
	bctx, cancel := context.WithCancel(ctx)
	a.cancelBackfill = cancel
	a.backfills.Add(1)
	go func() {
		defer a.backfills.Done()
		a.backfill(bctx)
	}()
}

// backfill reads, for each indexed lane, the messages after the last one
// handled (conversations.replies for a thread, conversations.history for
// a DM), bounded by count and age, and queues them for the worker, which
// handles them oldest first like live ones. Lanes whose cursor is older
// than the age bound, and lanes past maxBackfillLanes, are not read.
// Slack's redelivery covers envelopes sent while we were connected but
// not acked; this covers the ones it gave up on while we were away. The
// inbox drops what was already committed.
func (a *Adapter) backfill(ctx context.Context) {
	defer func() {
		if ctx.Err() == nil { // a replaced backfill leaves Ready to its successor
			a.toWorker(ctx, job{backfillDone: true})
		}
	}()
	recs, err := a.lanes.refresh(ctx)
	if err != nil {
		a.log.Error("slack.backfill.index_failed", zap.Error(err))
		return
	}
	floor := a.cfg.Now().Add(-a.cfg.Backfill.MaxAge).UnixMicro()
	read := 0
	for _, rec := range recs {
		if ctx.Err() != nil {
			return
		}
		if rec.LastMessageID == 0 || rec.LastMessageID < floor {
			continue // nothing handled there yet, or idle for longer than we read back
		}
		if read == maxBackfillLanes {
			a.log.Warn("slack.backfill.lanes_capped", zap.Int("lanes", maxBackfillLanes))
			return
		}
		read++
		msgs, err := a.missed(ctx, rec.ChannelID, formatTS(rec.LastMessageID))
		if err != nil {
			a.log.Warn("slack.backfill.fetch_failed", zap.String("lane", rec.ChannelID), zap.Error(err))
			if errors.Is(err, gateway.ErrPermanent) {
				a.forgetLane(ctx, rec.ChannelID)
			}
			continue
		}
		if len(msgs) > 0 {
			a.log.Info("slack.backfill", zap.String("lane", rec.ChannelID), zap.Int("messages", len(msgs)))
			a.toWorker(ctx, job{backfilled: msgs})
		}
	}
}

// toWorker queues j for the worker, waiting for room (unlike the reader,
// backfill may wait) until ctx ends.
func (a *Adapter) toWorker(ctx context.Context, j job) {
	select {
	case a.queue <- j:
	case <-ctx.Done():
	}
}

// deliverBackfilled handles one lane's missed messages, oldest first (on
// the worker).
func (a *Adapter) deliverBackfilled(ctx context.Context, msgs []inMsg) {
	for _, m := range msgs {
		if !a.handleMessage(ctx, m, true) {
			return // stopping: the rest waits for the next start
		}
	}
}

// missed reads a lane's messages after the ts oldest, oldest first.
func (a *Adapter) missed(ctx context.Context, key, oldest string) ([]inMsg, error) {
	addr := addressOfKey(key)
	var (
		page []slack.Message
		err  error
	)
	channelType := "channel"
	if addr.Kind == gateway.LaneDM {
		channelType = "im"
		page, err = a.historyAfter(ctx, addr.ChatID, oldest)
	} else {
		page, err = a.repliesAfter(ctx, addr.ChatID, addr.TopicID, oldest)
	}
	if err != nil {
		return nil, err
	}
	var out []inMsg
	for _, m := range page {
		// Slack puts a thread's root first whatever oldest says.
		if tsLess(oldest, m.Timestamp) {
			out = append(out, fromHistory(addr.ChatID, channelType, m))
		}
	}
	sort.Slice(out, func(i, j int) bool { return tsLess(out[i].ts, out[j].ts) })
	if len(out) > a.cfg.Backfill.MaxMessages {
		out = out[:a.cfg.Backfill.MaxMessages]
	}
	return out, nil
}

func (a *Adapter) repliesAfter(ctx context.Context, channel, threadTS, oldest string) ([]slack.Message, error) {
	var out []slack.Message
	cursor := ""
	for len(out) < a.cfg.Backfill.MaxMessages+1 {
		var (
			page []slack.Message
			next string
		)
		err := a.retry(ctx, "conversations.replies", func() error {
			var err error
			page, _, next, err = a.api.GetConversationRepliesContext(ctx, &slack.GetConversationRepliesParameters{
				ChannelID: channel, Timestamp: threadTS, Oldest: oldest, Cursor: cursor, Limit: historyPage})
			return mapError("conversations.replies", err)
		})
		if err != nil {
			return out, err
		}
		out = append(out, page...)
		if next == "" {
			break
		}
		cursor = next
	}
	return out, nil
}

func (a *Adapter) historyAfter(ctx context.Context, channel, oldest string) ([]slack.Message, error) {
	var out []slack.Message
	cursor := ""
	for len(out) < a.cfg.Backfill.MaxMessages {
		var resp *slack.GetConversationHistoryResponse
		err := a.retry(ctx, "conversations.history", func() error {
			var err error
			resp, err = a.api.GetConversationHistoryContext(ctx, &slack.GetConversationHistoryParameters{
				ChannelID: channel, Oldest: oldest, Cursor: cursor, Limit: historyPage})
			return mapError("conversations.history", err)
		})
		if err != nil {
			return out, err
		}
		out = append(out, resp.Messages...)
		if resp.ResponseMetaData.NextCursor == "" {
			break
		}
		cursor = resp.ResponseMetaData.NextCursor
	}
	return out, nil
}

// tsLess compares two ts: fixed six fractional digits, so the longer
// integer part is the later; equal lengths compare as strings.
func tsLess(a, b string) bool {
	ai, _, _ := strings.Cut(a, ".")
	bi, _, _ := strings.Cut(b, ".")
	if len(ai) != len(bi) {
		return len(ai) < len(bi)
	}
	return a < b
}

func (a *Adapter) forgetLane(ctx context.Context, key string) {
	if err := a.lanes.forget(ctx, key); err != nil {
		a.log.Warn("slack.lanes.save_failed", zap.Error(err))
	}
}
