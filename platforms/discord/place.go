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

// RenamePlace renames a thread lane's thread (a guild channel is the
// server's to name, a DM has none). Discord lets the thread's creator or
// a member who manages threads rename it; a refusal is ErrCannotRename.
// The answer is cached first, so the THREAD_UPDATE echoing the rename is
// no rename (channelCache.rename).
func (a *Adapter) RenamePlace(ctx context.Context, addr gateway.Address, name string) error {
	if addr.Kind != gateway.LaneThread {
		return fmt.Errorf("discord: a %s: %w", addr.Kind, gateway.ErrCannotRename)
	}
	ch, err := a.session.ChannelEdit(addr.TopicID, &discordgo.ChannelEdit{Name: forkThreadName(name)}, discordgo.WithContext(ctx))
	if err != nil {
		var rest *discordgo.RESTError
		if errors.As(err, &rest) && rest.Response != nil &&
			(rest.Response.StatusCode == http.StatusForbidden || rest.Response.StatusCode == http.StatusBadRequest) {
			return fmt.Errorf("discord: rename thread %s (%s): %w", addr.TopicID, restMessage(rest), gateway.ErrCannotRename)
		}
		return mapError("rename thread", err)
	}
	a.channels.put(ch)
	a.log.Info("discord.thread_renamed", zap.String("thread_id", addr.TopicID))
	return nil
}

// handleRename tells the gateway that a thread of an allowed place was
// renamed on Discord. A failed delivery is not retried: a rename is no
// message to lose, and the next one says the name again.
func (a *Adapter) handleRename(ctx context.Context, ch chanInfo) {
	if !a.allow.placeAllowed(ch.GuildID, ch) {
		return
	}
	in := gateway.Inbound{Address: a.laneFor(ch, ""), Title: ch.Name, Renamed: true, ReceivedAt: a.cfg.Now()}
	if _, err := a.currentSink().Deliver(ctx, in); err != nil {
		a.log.Warn("discord.rename_undelivered", zap.String("thread_id", ch.ID), zap.Error(err))
	}
}
