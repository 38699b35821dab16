package discord

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
	"github.com/gatewayd/gatewayd/gateway"
	"go.uber.org/zap"
)

// threadArchiveMinutes is how long an auto-created thread stays active.
const threadArchiveMinutes = 1440

// handleMessage decides whether a message is for the bot, finds its lane
// and delivers it. backfilled marks messages fetched from history.
func (a *Adapter) handleMessage(ctx context.Context, m *discordgo.Message, backfilled bool) {
	botID, _ := a.ids()
	if m.Author == nil || m.Author.ID == botID || (m.Author.Bot && a.cfg.IgnoreBots) ||
		(m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply) {
		a.advance(ctx, m)
		return
	}
	if !backfilled && a.lanes.handled(m.ChannelID, m.ID) {
		return // backfill already handled it
	}
	ch, err := a.channel(ctx, m.ChannelID)
	if err != nil {
		a.log.Error("discord.message.channel_lookup_failed", zap.String("channel_id", m.ChannelID),
			zap.String("message_id", m.ID), zap.Error(err))
		return
	}
	guildID := m.GuildID
	if guildID == "" {
		guildID = ch.GuildID
	}
	if !a.allow.placeAllowed(guildID, ch) {
		a.log.Debug("discord.message.place_not_allowed", zap.String("channel_id", ch.ID))
		return
	}
	addressed, direct := a.addressed(m, ch, botID)
	if !addressed {
		a.advance(ctx, m)
		return
	}
	roles := a.roles(ctx, guildID, m)
	if !a.allow.userAllowed(m.Author.ID, roles) {
		a.allow.logDenied(a.log, m.Author, ch.ID)
		a.advance(ctx, m)
		return
	}
	text := stripMention(m.Content, botID)
	addr := a.laneFor(ch, m.Author.ID)
	if a.cfg.AutoThread && direct && !ch.isDM() && !ch.isThread() {
		addr = a.autoThread(ctx, m, ch, text)
	} else if direct && ch.isThread() {
		a.track(ctx, ch.ID, true)
	}
	in := gateway.Inbound{
		Address:     addr,
		MessageID:   m.ID,
		SenderID:    m.Author.ID,
		SenderName:  m.Author.Username,
		SenderRoles: roles,
		Text:        text,
		Mentioned:   direct || strings.HasPrefix(text, "/"),
		ReceivedAt:  a.cfg.Now(),
	}
	if m.MessageReference != nil {
		in.ReplyTo = m.MessageReference.MessageID
	}
	if err := a.currentSink().Deliver(ctx, in); err != nil {
		// The cursor is not advanced, so a later backfill can fetch it again.
		a.deliverFailed(ctx, err, zap.String("message_id", m.ID), zap.String("session_key", addr.SessionKey()))
		return
	}
	a.track(ctx, m.ChannelID, false)
	a.advance(ctx, m)
}

// addressed reports whether the bot should answer, and whether the message
// addressed it directly (mention or reply to the bot).
func (a *Adapter) addressed(m *discordgo.Message, ch chanInfo, botID string) (answer, direct bool) {
	mentioned := slices.ContainsFunc(m.Mentions, func(u *discordgo.User) bool { return u != nil && u.ID == botID })
	repliedToBot := m.ReferencedMessage != nil && m.ReferencedMessage.Author != nil &&
		m.ReferencedMessage.Author.ID == botID
	direct = mentioned || repliedToBot
	switch {
	case ch.isDM(), direct:
		return true, direct
	case ch.isThread() && (ch.OwnerID == botID || a.lanes.engaged(ch.ID)):
		return true, false
	}
	free := a.cfg.FreeResponseChannels
	return slices.Contains(free, ch.ID) || (ch.ParentID != "" && slices.Contains(free, ch.ParentID)), false
}

// roles returns the sender's member roles. History messages carry no member,
// so the member is fetched when a role could decide.
func (a *Adapter) roles(ctx context.Context, guildID string, m *discordgo.Message) []string {
	if m.Member != nil {
		return m.Member.Roles
	}
	if guildID == "" || !a.allow.needsRoles(m.Author.ID) {
		return nil
	}
	member, err := a.session.GuildMember(guildID, m.Author.ID, discordgo.WithContext(ctx))
	if err != nil {
		a.log.Warn("discord.member_lookup_failed", zap.String("user_id", m.Author.ID), zap.Error(mapError("member", err)))
		return nil
	}
	return member.Roles
}

// laneFor maps a channel to its lane address.
func (a *Adapter) laneFor(ch chanInfo, userID string) gateway.Address {
	addr := gateway.Address{Platform: PlatformName, ChatID: ch.ID}
	switch {
	case ch.isDM():
		addr.Kind = gateway.LaneDM
	case ch.isThread():
		addr.Kind, addr.ChatID, addr.TopicID = gateway.LaneThread, ch.ParentID, ch.ID
	default:
		addr.Kind = gateway.LaneChannel
		if a.cfg.PerUserChannels {
			addr.UserID = userID
		}
	}
	return addr
}

// autoThread starts a thread on the message (or reuses the one it already
// has) and returns the thread's lane. On failure the channel lane is used.
func (a *Adapter) autoThread(ctx context.Context, m *discordgo.Message, ch chanInfo, text string) gateway.Address {
	thread := m.Thread
	if thread == nil {
		var err error
		thread, err = a.session.MessageThreadStart(ch.ID, m.ID, threadName(text, m.Author), threadArchiveMinutes,
			discordgo.WithContext(ctx))
		if err != nil {
			a.log.Warn("discord.auto_thread_failed", zap.String("channel_id", ch.ID),
				zap.String("message_id", m.ID), zap.Error(mapError("start thread", err)))
			return a.laneFor(ch, m.Author.ID)
		}
	}
	if thread.ParentID == "" {
		thread.ParentID = ch.ID
	}
	if thread.GuildID == "" {
		thread.GuildID = ch.GuildID
	}
	a.channels.put(thread)
	a.track(ctx, thread.ID, true)
	return a.laneFor(infoOf(thread), m.Author.ID)
}

func threadName(text string, author *discordgo.User) string {
	name := strings.Join(strings.Fields(text), " ")
	if name == "" {
		name = "Conversation with " + author.Username
	}
	if utf8.RuneCountInString(name) > 80 {
		name = string([]rune(name)[:79]) + "…"
	}
	return name
}

func stripMention(text, botID string) string {
	if botID != "" {
		text = strings.ReplaceAll(text, "<@"+botID+">", "")
		text = strings.ReplaceAll(text, "<@!"+botID+">", "")
	}
	return strings.TrimSpace(text)
}

func (a *Adapter) track(ctx context.Context, channelID string, engaged bool) {
	if err := a.lanes.track(ctx, channelID, engaged, a.cfg.Now()); err != nil {
		a.log.Warn("discord.lanes.save_failed", zap.Error(err))
	}
}

func (a *Adapter) advance(ctx context.Context, m *discordgo.Message) {
	if err := a.lanes.advance(ctx, m.ChannelID, m.ID); err != nil {
		a.log.Warn("discord.cursor.save_failed", zap.String("channel_id", m.ChannelID), zap.Error(err))
	}
}

// deliverFailed logs a failed Deliver: an error while running, a warning
// when it failed because we are shutting down.
func (a *Adapter) deliverFailed(ctx context.Context, err error, fields ...zap.Field) {
	fields = append(fields, zap.Error(err))
	if ctx.Err() != nil || a.stopped() {
		a.log.Warn("discord.deliver_failed", fields...)
		return
	}
	a.log.Error("discord.deliver_failed", fields...)
}
