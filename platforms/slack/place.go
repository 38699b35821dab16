package slack

import (
	"context"
	"fmt"
	"strings"

	"github.com/slack-go/slack"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// OpenPlace (/fork) opens a new thread in near's channel: a new
// top-level message named title, whose thread is the new lane, engaged
// (the bot answers there without a mention). A DM cannot hold threads of
// its own lanes: ErrNoPlace.
func (a *Adapter) OpenPlace(ctx context.Context, near gateway.Address, title string) (gateway.Address, error) {
	if near.Platform != PlatformName || near.Kind != gateway.LaneThread {
		return gateway.Address{}, fmt.Errorf("%w: a direct message holds one conversation; fork in a channel", gateway.ErrNoPlace)
	}
	name := strings.Join(strings.Fields(title), " ")
	if name == "" {
		name = "fork"
	}
	return a.openThread(ctx, near.ChatID, "*"+escapeMrkdwn(cutRunes(name, 200))+"*")
}

// openThread posts head (mrkdwn) as a top-level message in channel and
// returns its thread's lane, tracked and engaged. The head is the
// thread's first message, not a message to Codex: the lane's cursor
// starts after it.
func (a *Adapter) openThread(ctx context.Context, channel, head string) (gateway.Address, error) {
	ts, err := a.post(ctx, channel, []slack.MsgOption{slack.MsgOptionText(head, false),
		slack.MsgOptionDisableLinkUnfurl()})
	if err != nil {
		if code := slackCode(err); code == "not_in_channel" || code == "channel_not_found" || code == "is_archived" {
			return gateway.Address{}, fmt.Errorf("%w: Slack refused a new message in this channel (%s)", gateway.ErrNoPlace, code)
		}
		return gateway.Address{}, err
	}
	addr := threadAddress(channel, ts)
	key := laneKey(addr)
	n, _ := tsMicros(ts)
	if err := a.lanes.trackAfter(ctx, key, true, n, a.cfg.Now()); err != nil {
		a.log.Warn("slack.lanes.save_failed", zap.Error(err))
	}
	a.advance(ctx, key, ts)
	a.log.Info("slack.thread_opened", zap.String("channel_id", channel), zap.String("thread_ts", ts))
	return addr, nil
}
