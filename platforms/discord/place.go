package discord

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// maxThreadName is Discord's limit on a thread's name.
const maxThreadName = 100

// OpenPlace starts a thread for /fork in near's channel (the parent
// channel of a thread lane), named title. A DM cannot hold threads; a
// channel where Discord refuses one (no permission, a channel type without
// threads) is ErrNoPlace too.
func (a *Adapter) OpenPlace(ctx context.Context, near gateway.Address, title string) (gateway.Address, error) {
	if near.Kind != gateway.LaneThread && near.Kind != gateway.LaneChannel {
		return gateway.Address{}, fmt.Errorf("%w: a direct message cannot hold threads; fork in a server channel", gateway.ErrNoPlace)
	}
	thread, err := a.session.ThreadStart(near.ChatID, forkThreadName(title), discordgo.ChannelTypeGuildPublicThread,
		threadArchiveMinutes, discordgo.WithContext(ctx))
	if err != nil {
		var rest *discordgo.RESTError
		if errors.As(err, &rest) && rest.Response != nil &&
			(rest.Response.StatusCode == http.StatusForbidden || rest.Response.StatusCode == http.StatusBadRequest) {
			return gateway.Address{}, fmt.Errorf("%w: Discord refused a new thread in this channel (%s)", gateway.ErrNoPlace, restMessage(rest))
		}
		return gateway.Address{}, mapError("start thread", err)
	}
	if thread.ParentID == "" {
		thread.ParentID = near.ChatID
	}
	a.channels.put(thread)
	a.track(ctx, thread.ID, true) // the fork's thread is the bot's: engaged without a mention
	a.log.Info("discord.thread_opened", zap.String("channel_id", near.ChatID), zap.String("thread_id", thread.ID))
	return a.laneFor(infoOf(thread), ""), nil
}

// restMessage is Discord's message in a REST error, without the request.
func restMessage(err *discordgo.RESTError) string {
	if err.Message != nil && err.Message.Message != "" {
		return err.Message.Message
	}
	return err.Response.Status
}

func forkThreadName(title string) string {
	name := strings.Join(strings.Fields(title), " ")
	if name == "" {
		name = "fork"
	}
	if utf8.RuneCountInString(name) > maxThreadName {
		name = string([]rune(name)[:maxThreadName-1]) + "…"
	}
	return name
}
