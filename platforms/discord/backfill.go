package discord

import (
	"context"
	"errors"
	"sort"
	"strconv"

	"github.com/bwmarrin/discordgo"
	"github.com/gatewayd/gatewayd/gateway"
	"go.uber.org/zap"
)

// historyPage is the largest page Discord's message history route returns.
const historyPage = 100

// backfill runs on every READY (first connect, or a new session after a
// long disconnect or an invalid session; a RESUME replays events instead).
// For each tracked channel it fetches messages after the last one seen,
// bounded by count and age, and handles them oldest first exactly like live
// messages. Redelivery is harmless: the gateway's inbox drops duplicates.
//
// The channels and their cursors are read from the database at this
// READY, not from what this process loaded at start: on several nodes, the
// node that held a shard before may have added lanes to it since. A
// shard's session (shard != allShards) backfills only the channels of that
// shard; the other shards' sessions, maybe on other nodes, do theirs.
func (a *Adapter) backfill(ctx context.Context, shard int) {
	recs, err := a.lanes.refresh(ctx)
	if err != nil {
		// Nothing to backfill from; the messages wait for the next READY.
		a.log.Error("discord.backfill.index_failed", zap.Int("shard", shard), zap.Error(err))
		return
	}
	floor := snowflakeAt(a.cfg.Now().Add(-a.cfg.Backfill.MaxAge))
	for _, rec := range recs {
		if ctx.Err() != nil {
			return
		}
		channelID := rec.ChannelID
		if rec.LastMessageID == 0 || !a.onShard(ctx, channelID, shard) {
			continue // no message handled there yet: nothing to fetch after
		}
		after := max(uint64(rec.LastMessageID), floor)
		msgs, err := a.history(ctx, channelID, strconv.FormatUint(after, 10))
		if err != nil {
			a.log.Warn("discord.backfill.fetch_failed", zap.String("channel_id", channelID), zap.Error(err))
			if errors.Is(err, gateway.ErrPermanent) {
				a.forgetLane(ctx, channelID)
			}
			continue
		}
		if len(msgs) > 0 {
			a.log.Info("discord.backfill", zap.String("channel_id", channelID), zap.Int("messages", len(msgs)))
		}
		for _, m := range msgs {
			if !a.handleMessage(ctx, m, true) {
				return // stopping: the rest waits for the next start's backfill
			}
		}
	}
}

// history fetches up to Backfill.MaxMessages messages after the given id,
// oldest first.
func (a *Adapter) history(ctx context.Context, channelID, after string) ([]*discordgo.Message, error) {
	var out []*discordgo.Message
	for len(out) < a.cfg.Backfill.MaxMessages {
		limit := min(historyPage, a.cfg.Backfill.MaxMessages-len(out))
		page, err := a.session.ChannelMessages(channelID, limit, "", after, "", discordgo.WithContext(ctx))
		if err != nil {
			return out, mapError("history", err)
		}
		// Discord answers newest first; we deliver oldest first.
		sort.Slice(page, func(i, j int) bool { return parseSnowflake(page[i].ID) < parseSnowflake(page[j].ID) })
		out = append(out, page...)
		if len(page) < limit {
			break
		}
		after = page[len(page)-1].ID
	}
	return out, nil
}

func (a *Adapter) forgetLane(ctx context.Context, channelID string) {
	if err := a.lanes.forget(ctx, channelID); err != nil {
		a.log.Warn("discord.lanes.save_failed", zap.Error(err))
	}
}
