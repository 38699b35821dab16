package discord

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/backoff"
	"go.uber.org/zap"
)

// threadArchiveMinutes is how long an auto-created thread stays active.
const threadArchiveMinutes = 1440

// handleMessage decides whether a message is for the bot, finds its lane
// and delivers it. backfilled marks messages fetched from history. It
// returns false when the message could not be delivered because we are
// stopping: the channel's cursor then stays before it (see skipUndelivered).
func (a *Adapter) handleMessage(ctx context.Context, m *discordgo.Message, backfilled bool) bool {
	botID, _ := a.ids()
	if m.Author == nil || m.Author.ID == botID || (m.Author.Bot && a.cfg.IgnoreBots) ||
		(m.Type != discordgo.MessageTypeDefault && m.Type != discordgo.MessageTypeReply) {
		a.advance(ctx, m)
		return true
	}
	if !backfilled && a.lanes.handled(m.ChannelID, m.ID) {
		return true // backfill already handled it
	}
	var ch chanInfo
	err := a.retry(ctx, "channel lookup", m, func() error {
		var err error
		ch, err = a.channel(ctx, m.ChannelID)
		return err
	})
	if err != nil {
		a.log.Error("discord.message.channel_lookup_failed", zap.String("channel_id", m.ChannelID),
			zap.String("message_id", m.ID), zap.Error(err))
		return a.skipUndelivered(m, err)
	}
	guildID := m.GuildID
	if guildID == "" {
		guildID = ch.GuildID
	}
	if !a.allow.placeAllowed(guildID, ch) {
		a.log.Debug("discord.message.place_not_allowed", zap.String("channel_id", ch.ID))
		return true
	}
	addressed, direct := a.addressed(m, ch, botID)
	if !addressed {
		a.deliverAmbient(ctx, m, ch, guildID, botID)
		a.advance(ctx, m)
		return true
	}
	roles := a.roles(ctx, guildID, m)
	if !a.allow.userAllowed(m.Author.ID, roles) {
		a.allow.logDenied(a.log, m.Author, ch.ID)
		a.advance(ctx, m)
		return true
	}
	text := stripMention(m.Content, botID)
	addr := a.laneFor(ch, m.Author.ID)
	// The channel's name names its lane; a thread opened for the message
	// is a new lane the gateway names from the text, as the thread is.
	title := ch.Name
	if a.cfg.AutoThread && direct && !ch.isDM() && !ch.isThread() {
		addr, title = a.autoThread(ctx, m, ch, text), ""
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
		Attachments: a.attachmentsOf(m),
		Title:       title,
	}
	if m.MessageReference != nil {
		in.ReplyTo = m.MessageReference.MessageID
		in.Quote = quoteOf(m.ReferencedMessage, botID)
	}
	in.DisplayName = displayName(m.Member, m.Author)
	if err := in.Address.Validate(); err != nil {
		// Cannot heal; retrying it would block every later message.
		a.log.Error("discord.message.bad_address", zap.String("message_id", m.ID), zap.Error(err))
		return true
	}
	if err := a.lanes.ingesting(ctx, m.ChannelID, m.ID, a.cfg.Now()); err != nil {
		a.log.Warn("discord.lanes.save_failed", zap.Error(err))
	}
	sink := a.currentSink()
	if err := a.retry(ctx, "deliver", m, func() error { _, err := sink.Deliver(ctx, in); return err }); err != nil {
		a.deliverFailed(ctx, err, zap.String("message_id", m.ID), zap.String("session_key", addr.SessionKey()))
		return a.skipUndelivered(m, err)
	}
	a.advance(ctx, m)
	return true
}

// retry runs fn for message m until it succeeds, backing off from
// Config.RetryBackoff to maxRetryBackoff between attempts (longer when
// Discord asks for it with a rate limit). It blocks the
// worker, and so every later event, as the Telegram poller does: a later
// message of the channel must not move the cursor past this one, and the
// lane's order is kept. It gives up, returning the error, on a permanent
// error, on gateway.ErrShuttingDown, or when the adapter stops.
func (a *Adapter) retry(ctx context.Context, op string, m *discordgo.Message, fn func() error) error {
	delays := backoff.New(a.cfg.RetryBackoff, maxRetryBackoff)
	for {
		err := fn()
		if err == nil || errors.Is(err, gateway.ErrPermanent) || errors.Is(err, gateway.ErrShuttingDown) {
			return err
		}
		if ctx.Err() != nil || a.stopped() {
			return err
		}
		wait := delays.Next()
		var ra *gateway.RetryAfterError
		if errors.As(err, &ra) && ra.After > wait {
			wait = ra.After // a rate-limited lookup: Discord says when
		}
		a.log.Warn("discord.retry", zap.String("op", op), zap.String("channel_id", m.ChannelID),
			zap.String("message_id", m.ID), zap.Duration("retry_in", wait), zap.Error(err))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-a.stop:
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// skipUndelivered decides what a message that was not delivered does to
// its channel's cursor, and reports whether the caller may go on. A
// permanent failure will not heal: the message is skipped and later ones
// move the cursor as usual. Otherwise (we are stopping, or the gateway is)
// the channel's cursor is held where it is for the rest of this process,
// so no later message (not even the bot's own) moves it past this one and
// the backfill after the restart delivers it.
func (a *Adapter) skipUndelivered(m *discordgo.Message, err error) bool {
	if errors.Is(err, gateway.ErrPermanent) {
		return true
	}
	a.lanes.hold(m.ChannelID)
	return false
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
	if ctx.Err() != nil || a.stopped() || errors.Is(err, gateway.ErrShuttingDown) {
		a.log.Warn("discord.deliver_failed", fields...)
		return
	}
	a.log.Error("discord.deliver_failed", fields...)
}

// displayName is the name Discord shows for a message's author: the
// member's server nickname, else the user's display (global) name, else
// the username.
func displayName(member *discordgo.Member, u *discordgo.User) string {
	if member != nil && member.Nick != "" {
		return member.Nick
	}
	if u.GlobalName != "" {
		return u.GlobalName
	}
	return u.Username
}

// quoteOf is the replied-to message, nil when Discord did not send it
// (deleted, or too old to resolve) or it has no text.
func quoteOf(ref *discordgo.Message, botID string) *gateway.Quote {
	if ref == nil || strings.TrimSpace(ref.Content) == "" {
		return nil
	}
	q := &gateway.Quote{Text: stripMention(ref.Content, botID)}
	if ref.Author != nil {
		q.Author, q.FromBot = displayName(ref.Member, ref.Author), ref.Author.ID == botID
	}
	return q
}

// deliverAmbient hands the gateway a message said in a shared channel
// without addressing the bot, from an allowed member: the room's talk,
// which the gateway keeps as context for the bot's next turn there
// (lanes.group_context) or drops. It is context, so a failure is logged,
// not retried: the channel's later messages must not wait for it.
func (a *Adapter) deliverAmbient(ctx context.Context, m *discordgo.Message, ch chanInfo, guildID, botID string) {
	text := strings.TrimSpace(stripMention(m.Content, botID))
	if ch.isDM() || text == "" {
		return
	}
	if !a.allow.userAllowed(m.Author.ID, a.roles(ctx, guildID, m)) {
		return // a stranger's words are never passed on
	}
	in := gateway.Inbound{
		Address: a.laneFor(ch, m.Author.ID), MessageID: m.ID, SenderID: m.Author.ID, SenderName: m.Author.Username,
		DisplayName: displayName(m.Member, m.Author), Text: text, ReceivedAt: a.cfg.Now(), Ambient: true,
	}
	if _, err := a.currentSink().Deliver(ctx, in); err != nil {
		a.log.Warn("discord.ambient_deliver_failed", zap.String("message_id", m.ID), zap.Error(err))
	}
}

// handleEdit hands the gateway an edit of a message it may have: one an
// allowed member addressed to the bot (the gateway replaces it while it
// waits, or steers it into its running turn). Edits of the room's talk,
// of the bot's or other bots' messages, and updates without content (an
// embed resolved) are not edits of what was asked.
func (a *Adapter) handleEdit(ctx context.Context, m *discordgo.Message) {
	botID, _ := a.ids()
	if m.Author == nil || m.Author.ID == botID || m.Author.Bot || m.Content == "" {
		return
	}
	ch, err := a.channel(ctx, m.ChannelID)
	if err != nil {
		a.log.Debug("discord.edit.channel_lookup_failed", zap.String("channel_id", m.ChannelID), zap.Error(err))
		return
	}
	guildID := m.GuildID
	if guildID == "" {
		guildID = ch.GuildID
	}
	if !a.allow.placeAllowed(guildID, ch) {
		return
	}
	if addressed, _ := a.addressed(m, ch, botID); !addressed {
		return
	}
	if !a.allow.userAllowed(m.Author.ID, a.roles(ctx, guildID, m)) {
		return
	}
	in := gateway.Inbound{
		Address: a.laneFor(ch, m.Author.ID), MessageID: m.ID, SenderID: m.Author.ID, SenderName: m.Author.Username,
		DisplayName: displayName(m.Member, m.Author), Text: stripMention(m.Content, botID), ReceivedAt: a.cfg.Now(), Edited: true,
	}
	if _, err := a.currentSink().Deliver(ctx, in); err != nil {
		a.log.Warn("discord.edit_deliver_failed", zap.String("message_id", m.ID), zap.Error(err))
	}
}
