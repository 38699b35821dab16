package slack

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/slackevents"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/backoff"
)

type slackEventsAPI = slackevents.EventsAPIEvent

// inMsg is a user's message, from a live event or read back from history.
type inMsg struct {
	channel, channelType string
	user, botID          string
	text, ts, threadTS   string
	subtype              string
	files                []slack.File
}

func fromEvent(me *slackevents.MessageEvent) inMsg {
	m := inMsg{channel: me.Channel, channelType: me.ChannelType, user: me.User, botID: me.BotID, text: me.Text,
		ts: me.TimeStamp, threadTS: me.ThreadTimeStamp, subtype: me.SubType}
	if me.Message != nil {
		m.files = me.Message.Files
	}
	return m
}

func fromHistory(channel, channelType string, h slack.Message) inMsg {
	return inMsg{channel: channel, channelType: channelType, user: h.User, botID: h.BotID, text: h.Text,
		ts: h.Timestamp, threadTS: h.ThreadTimestamp, subtype: h.SubType, files: h.Files}
}

func (m inMsg) isDM() bool {
	return m.channelType == "im" || (m.channelType == "" && strings.HasPrefix(m.channel, "D"))
}

// topLevel: not a reply in a thread (a thread's root has thread_ts = ts).
func (m inMsg) topLevel() bool { return m.threadTS == "" || m.threadTS == m.ts }

// handleEventsAPI handles one events_api envelope; false leaves it
// unacked (not committed because we are stopping).
func (a *Adapter) handleEventsAPI(ctx context.Context, ev slackEventsAPI, retryAttempt int) bool {
	me, ok := ev.InnerEvent.Data.(*slackevents.MessageEvent)
	if !ok {
		// app_mention repeats a message event we get anyway; others are
		// not subscribed to.
		return true
	}
	if retryAttempt > 0 {
		a.log.Debug("slack.redelivery", zap.String("channel_id", me.Channel), zap.String("ts", me.TimeStamp),
			zap.Int("retry_attempt", retryAttempt))
	}
	if me.SubType == "message_changed" {
		return a.handleEdit(ctx, me)
	}
	return a.handleMessage(ctx, fromEvent(me), false)
}

// userSubtypes are the message subtypes that are a person talking.
var userSubtypes = map[string]bool{"": true, "file_share": true, "thread_broadcast": true, "me_message": true}

// handleMessage decides whether a message is for the bot, finds its lane
// and delivers it; backfilled marks messages read back from history. It
// returns false when the message was not delivered because we are
// stopping: its lane's cursor stays before it and the envelope unacked.
func (a *Adapter) handleMessage(ctx context.Context, m inMsg, backfilled bool) bool {
	bot := a.identity()
	addr, direct, ok := a.route(m, bot)
	if !ok {
		return true
	}
	key := laneKey(addr)
	if m.botID != "" || m.user == "" || m.user == bot.UserID || !userSubtypes[m.subtype] {
		a.advance(ctx, key, m.ts) // the bot's own posts, other bots, joins…
		return true
	}
	id := messageID(m.channel, m.ts)
	if !backfilled && a.lanes.deliveredByBackfill(id) {
		return true // backfill delivered it moments ago
	}
	// A thread the bot was never addressed in is not its business. An
	// engaged thread's every allowed message is delivered (Mentioned only
	// when addressed): the gateway's room-talk rules decide what of it is
	// context and what starts a turn, so the adapter has no ambient path.
	if !direct && !m.isDM() && !a.lanes.engaged(key) {
		a.advance(ctx, key, m.ts)
		return true
	}
	if !a.allow.allows(addr, m.user) {
		a.denials.log(a.log, m.user, m.channel)
		a.advance(ctx, key, m.ts)
		return true
	}
	in := a.inbound(ctx, m, addr, bot)
	in.Mentioned = in.Mentioned || direct || m.isDM()
	if err := a.lanes.ingesting(ctx, key, m.ts, direct && addr.Kind == gateway.LaneThread, a.cfg.Now()); err != nil {
		a.log.Warn("slack.lanes.save_failed", zap.Error(err))
	}
	sink := a.currentSink()
	err := a.retry(ctx, "deliver", func() error { _, err := sink.Deliver(ctx, in); return err })
	if err != nil {
		a.deliverFailed(ctx, err, zap.String("message_id", in.MessageID), zap.String("session_key", addr.SessionKey()))
		return a.skipUndelivered(key, err)
	}
	if backfilled {
		a.lanes.backfilled(id)
	}
	a.advance(ctx, key, m.ts)
	return true
}

// route finds the lane of m: a DM's, or its thread's. A top-level
// message in a shared room has a lane only when it mentions the bot: it
// starts a thread under itself, where the answer goes.
func (a *Adapter) route(m inMsg, bot botIdentity) (addr gateway.Address, direct, ok bool) {
	if m.channel == "" || m.ts == "" {
		return gateway.Address{}, false, false
	}
	direct = bot.UserID != "" && strings.Contains(m.text, "<@"+bot.UserID+">")
	switch {
	case m.isDM():
		return dmAddress(m.channel), direct, true
	case !a.allow.channel(m.channel):
		return gateway.Address{}, false, false
	case !m.topLevel():
		return threadAddress(m.channel, m.threadTS), direct, true
	case direct:
		return threadAddress(m.channel, m.ts), true, true
	}
	return gateway.Address{}, false, false
}

// inbound is the gateway's view of m: the mention stripped, a command
// spelled !cmd or /cmd rewritten to /cmd, the sender's names and files.
func (a *Adapter) inbound(ctx context.Context, m inMsg, addr gateway.Address, bot botIdentity) gateway.Inbound {
	text, isCommand := a.commandText(stripMention(m.text, bot.UserID))
	name, display := a.userNames(ctx, m.user)
	return gateway.Inbound{
		Address:     addr,
		MessageID:   messageID(m.channel, m.ts),
		SenderID:    m.user,
		SenderName:  name,
		DisplayName: display,
		Text:        unescape(text),
		Mentioned:   isCommand,
		ReceivedAt:  a.cfg.Now(),
		Attachments: a.attachmentsOf(m.files),
	}
}

// messageID is an inbound message's id: a ts is unique only within its
// channel, and the inbox keys redeliveries by it.
func messageID(channel, ts string) string { return channel + ":" + ts }

func stripMention(text, botUserID string) string {
	if botUserID != "" {
		text = strings.ReplaceAll(text, "<@"+botUserID+">", "")
	}
	return strings.TrimSpace(text)
}

// commandText rewrites "!name args" and "/name args" to "/name args" when
// name is a gateway command: Slack allows no slash commands inside a
// thread, so "!" is the thread's spelling. Other text is left alone.
func (a *Adapter) commandText(text string) (string, bool) {
	if len(text) < 2 || (text[0] != '!' && text[0] != '/') {
		return text, false
	}
	word, rest, _ := strings.Cut(text[1:], " ")
	word = strings.ToLower(word)
	for _, c := range a.cfg.Commands {
		if c.Name == word {
			if rest = strings.TrimSpace(rest); rest != "" {
				return "/" + word + " " + rest, true
			}
			return "/" + word, true
		}
	}
	return text, false
}

// unescape undoes Slack's escaping of &, < and > in message text.
func unescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&amp;", "&").Replace(s)
}

// handleEdit hands the gateway an edit of a message it may hold: one an
// allowed member addressed to the bot (the gateway replaces it while it
// waits, or steers it into its running turn). It returns false, leaving
// the envelope unacked for Slack to redeliver, when the gateway did not
// take the edit and may later.
func (a *Adapter) handleEdit(ctx context.Context, me *slackevents.MessageEvent) bool {
	if me.Message == nil || me.Message.BotID != "" || me.Message.User == "" {
		return true
	}
	if me.PreviousMessage != nil && me.PreviousMessage.Text == me.Message.Text {
		return true // an unfurl or a file added, not new words
	}
	m := inMsg{channel: me.Channel, channelType: me.ChannelType, user: me.Message.User, text: me.Message.Text,
		ts: me.Message.Timestamp, threadTS: me.Message.ThreadTimestamp}
	bot := a.identity()
	addr, direct, ok := a.route(m, bot)
	if !ok || m.user == bot.UserID || !(direct || m.isDM() || a.lanes.engaged(laneKey(addr))) {
		return true
	}
	if !a.allow.allows(addr, m.user) {
		return true
	}
	in := a.inbound(ctx, m, addr, bot)
	in.Edited, in.Attachments = true, nil
	if _, err := a.currentSink().Deliver(ctx, in); err != nil {
		a.log.Warn("slack.edit_deliver_failed", zap.String("message_id", in.MessageID), zap.Error(err))
		return errors.Is(err, gateway.ErrPermanent)
	}
	return true
}

// retry runs fn until it succeeds, backing off from Config.RetryBackoff
// to maxRetryBackoff (longer when Slack asks). It blocks the worker, and
// so every later envelope: a lane's order is kept. It gives up on a
// permanent error, on gateway.ErrShuttingDown, or when the adapter stops.
func (a *Adapter) retry(ctx context.Context, op string, fn func() error) error {
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
			wait = ra.After
		}
		a.log.Warn("slack.retry", zap.String("op", op), zap.Duration("retry_in", wait), zap.Error(err))
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

// skipUndelivered: a permanent failure will not heal, so the message is
// skipped; otherwise (we or the gateway are stopping) the lane's cursor is
// held for the rest of this process so the next backfill finds it, and
// the envelope stays unacked so Slack redelivers it.
func (a *Adapter) skipUndelivered(key string, err error) bool {
	if errors.Is(err, gateway.ErrPermanent) {
		return true
	}
	a.lanes.hold(key)
	return false
}

func (a *Adapter) deliverFailed(ctx context.Context, err error, fields ...zap.Field) {
	fields = append(fields, zap.Error(err))
	if ctx.Err() != nil || a.stopped() || errors.Is(err, gateway.ErrShuttingDown) {
		a.log.Warn("slack.deliver_failed", fields...)
		return
	}
	a.log.Error("slack.deliver_failed", fields...)
}

func (a *Adapter) advance(ctx context.Context, key, ts string) {
	if err := a.lanes.advance(ctx, key, ts); err != nil {
		a.log.Warn("slack.cursor.save_failed", zap.String("lane", key), zap.Error(err))
	}
}
