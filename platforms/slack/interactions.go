package slack

import (
	"context"
	"strings"

	"github.com/slack-go/slack"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

const (
	buttonRefusal   = "You are not allowed to use this bot."
	pressNotSaved   = "Your choice could not be recorded; please press again."
	commandInThread = "Use `!%s` inside the conversation's thread (Slack allows no slash commands in threads)."
	notBotDM        = "Use /codex in your DM with the bot or in a channel: the bot cannot answer in a conversation between people."
	slashUsage      = "Usage: `/codex <prompt>` starts a thread; `/codex fork [title]` opens an empty one; in a thread, write `!command`."
)

// handleInteraction turns a button press (block_actions) into a
// Callback on the lane of the message pressed, the presser as sender.
// Whether the presser may decide (the requester or an admin) is the
// gateway's check. Interactive envelopes are never redelivered, so it is
// always acked.
func (a *Adapter) handleInteraction(ctx context.Context, cb slack.InteractionCallback) bool {
	if cb.Type != slack.InteractionTypeBlockActions || len(cb.ActionCallback.BlockActions) == 0 {
		return true
	}
	act := cb.ActionCallback.BlockActions[0]
	value := act.Value
	if value == "" {
		value = act.SelectedOption.Value
	}
	addr := pressedLane(cb)
	if value == "" || addr.Validate() != nil {
		return true
	}
	thread := addr.TopicID
	if !a.allow.allows(addr, cb.User.ID) {
		if a.denials.log(a.log, cb.User.ID, addr.ChatID) { // throttled, as the log is
			a.ephemeral(ctx, addr.ChatID, cb.User.ID, thread, buttonRefusal)
		}
		return true
	}
	in := gateway.Inbound{Address: addr, MessageID: "act:" + cb.TriggerID, SenderID: cb.User.ID,
		SenderName: firstNonEmpty(cb.User.Name, cb.User.ID), Callback: value, Mentioned: true, ReceivedAt: a.cfg.Now()}
	sink := a.currentSink()
	if err := a.retry(ctx, "deliver press", func() error { _, err := sink.Deliver(ctx, in); return err }); err != nil {
		a.deliverFailed(ctx, err, zap.String("message_id", in.MessageID))
		a.ephemeral(ctx, addr.ChatID, cb.User.ID, thread, pressNotSaved)
	}
	return true
}

// pressedLane is the lane of the message whose button was pressed: a
// DM's, even when the message got a thread (a DM is one lane, as inbound
// routes it), else its thread; a top-level message in a channel (the
// root of a /fork thread) is the root of its own thread.
func pressedLane(cb slack.InteractionCallback) gateway.Address {
	channel := firstNonEmpty(cb.Container.ChannelID, cb.Channel.ID)
	if isDMChannel(channel) {
		return dmAddress(channel)
	}
	if thread := firstNonEmpty(cb.Container.ThreadTs, cb.Message.ThreadTimestamp); thread != "" {
		return threadAddress(channel, thread)
	}
	return threadAddress(channel, firstNonEmpty(cb.Container.MessageTs, cb.Message.Timestamp))
}

// ephemeral tells one user something only they see; a failure is logged.
func (a *Adapter) ephemeral(ctx context.Context, channel, user, thread, text string) {
	opts := []slack.MsgOption{slack.MsgOptionText(escapeMrkdwn(text), false)}
	if thread != "" {
		opts = append(opts, slack.MsgOptionTS(thread))
	}
	err := a.call(ctx, "chat.postEphemeral", func(ctx context.Context) error {
		_, err := a.api.PostEphemeralContext(ctx, channel, user, opts...)
		return err
	})
	if err != nil {
		a.log.Warn("slack.ephemeral_failed", zap.String("channel_id", channel), zap.Error(err))
	}
}

// slashAnswer is a slash command's ack payload: what the invoker sees.
func slashAnswer(text string) map[string]string {
	return map[string]string{"response_type": "ephemeral", "text": text}
}

// slashAtOnce answers what /codex can answer without I/O (a refusal,
// the usage, a lane command in a channel): the answer goes in the ack.
// done false leaves the command to handleSlash, on the interaction worker.
func (a *Adapter) slashAtOnce(cmd slack.SlashCommand) (answer string, done bool) {
	text := strings.TrimSpace(cmd.Text)
	word, _, _ := strings.Cut(text, " ")
	word = strings.ToLower(word)
	switch {
	case !a.allow.allows(slashPlace(cmd), cmd.UserID):
		a.denials.log(a.log, cmd.UserID, cmd.ChannelID)
		return buttonRefusal, true
	case text == "":
		return slashUsage, true
	case !isDMChannel(cmd.ChannelID) && word != "fork" && a.isCommand(word):
		return strings.Replace(commandInThread, "%s", word, 1), true
	}
	return "", false
}

// slashPlace is the lane a slash command is checked against: the DM's,
// or in a channel no thread yet (the place, for the allowlist).
func slashPlace(cmd slack.SlashCommand) gateway.Address {
	if isDMChannel(cmd.ChannelID) {
		return dmAddress(cmd.ChannelID)
	}
	return threadAddress(cmd.ChannelID, "0.000000")
}

func isDMChannel(id string) bool { return strings.HasPrefix(id, "D") }

// handleSlash runs the manifest's /codex command past slashAtOnce. In a
// DM it acts on the DM's lane ("/codex new" is /new there). In a channel
// no thread is known: a prompt, or "fork [title]", opens a thread under a
// new top-level message. It returns the answer for the invoker.
func (a *Adapter) handleSlash(ctx context.Context, cmd slack.SlashCommand) string {
	text := strings.TrimSpace(cmd.Text)
	word, rest, _ := strings.Cut(text, " ")
	word = strings.ToLower(word)
	isCommand := a.isCommand(word)
	switch {
	case isDMChannel(cmd.ChannelID):
		if !a.isBotDM(ctx, cmd.ChannelID, cmd.UserID) {
			return notBotDM
		}
		if isCommand {
			text = "/" + text
		}
		return a.deliverSlash(ctx, cmd, dmAddress(cmd.ChannelID), text, isCommand)
	case word == "fork":
		return a.slashThread(ctx, cmd, strings.TrimSpace(rest), "")
	}
	return a.slashThread(ctx, cmd, text, text)
}

// maxBotDMs bounds the cache of DMs known to be the bot's.
const maxBotDMs = 1000

// isBotDM reports whether DM channel is the bot's DM with user: a slash
// command also works in a DM between two people, where the bot can
// neither read nor answer (conversations.info answers channel_not_found).
// A DM found to be the bot's is remembered; a failed lookup says no.
func (a *Adapter) isBotDM(ctx context.Context, channel, user string) bool {
	a.botDMsMu.Lock()
	known := a.botDMs[channel] == user
	a.botDMsMu.Unlock()
	if known {
		return true
	}
	var info *slack.Channel
	err := a.call(ctx, "conversations.info", func(ctx context.Context) error {
		var err error
		info, err = a.api.GetConversationInfoContext(ctx, &slack.GetConversationInfoInput{ChannelID: channel})
		return err
	})
	if err != nil {
		a.log.Info("slack.slash_not_bot_dm", zap.String("channel_id", channel), zap.Error(err))
		return false
	}
	if !info.IsIM || info.User != user {
		return false
	}
	a.botDMsMu.Lock()
	if len(a.botDMs) >= maxBotDMs {
		clear(a.botDMs)
	}
	a.botDMs[channel] = user
	a.botDMsMu.Unlock()
	return true
}

func (a *Adapter) isCommand(word string) bool {
	for _, c := range a.cfg.Commands {
		if c.Name == word {
			return true
		}
	}
	return false
}

// slashThread opens a thread in the command's channel under a message
// naming the invoker, and delivers prompt there when there is one.
func (a *Adapter) slashThread(ctx context.Context, cmd slack.SlashCommand, title, prompt string) string {
	head := "<@" + cmd.UserID + ">"
	if name := strings.Join(strings.Fields(title), " "); name != "" {
		head += ": " + escapeMrkdwn(cutRunes(name, 200)) // the user's words must not ping
	}
	addr, err := a.openThread(ctx, cmd.ChannelID, head)
	if err != nil {
		a.log.Warn("slack.slash_thread_failed", zap.String("channel_id", cmd.ChannelID), zap.Error(err))
		return "Could not open a thread here: " + err.Error()
	}
	if prompt == "" {
		return "Thread opened: write in it, no mention needed."
	}
	return a.deliverSlash(ctx, cmd, addr, prompt, false)
}

// deliverSlash delivers a slash command's text to addr; it answers the
// invoker with what was run, or with why it was not.
func (a *Adapter) deliverSlash(ctx context.Context, cmd slack.SlashCommand, addr gateway.Address, text string, isCommand bool) string {
	name, display := a.userNames(ctx, cmd.UserID)
	in := gateway.Inbound{Address: addr, MessageID: "cmd:" + cmd.TriggerID, SenderID: cmd.UserID, SenderName: name,
		DisplayName: display, Text: text, Mentioned: true, ReceivedAt: a.cfg.Now()}
	sink := a.currentSink()
	if err := a.retry(ctx, "deliver slash", func() error { _, err := sink.Deliver(ctx, in); return err }); err != nil {
		a.deliverFailed(ctx, err, zap.String("message_id", in.MessageID))
		return "Your command could not be recorded; please try again."
	}
	if isCommand {
		return "`" + text + "`"
	}
	return "Sent to Codex."
}
