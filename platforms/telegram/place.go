package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// maxTopicName is Telegram's limit on a forum topic's name (characters).
const maxTopicName = 128

// OpenPlace opens a forum topic for /fork in near's group
// (createForumTopic). A private chat and a group without topics cannot
// hold one; nor can a forum where the bot may not manage topics.
func (a *Adapter) OpenPlace(ctx context.Context, near gateway.Address, title string) (gateway.Address, error) {
	switch near.Kind {
	case gateway.LaneDM:
		return gateway.Address{}, fmt.Errorf("%w: a private chat has no topics; fork in a group with topics on", gateway.ErrNoPlace)
	case gateway.LaneGroup:
		return gateway.Address{}, fmt.Errorf("%w: this group has no topics; turn topics on to fork here", gateway.ErrNoPlace)
	case gateway.LaneTopic:
	default:
		return gateway.Address{}, fmt.Errorf("%w: a %s conversation", gateway.ErrNoPlace, near.Kind)
	}
	chat, err := strconv.ParseInt(near.ChatID, 10, 64)
	if err != nil {
		return gateway.Address{}, fmt.Errorf("telegram: chat id %q: %w", near.ChatID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	topic, err := a.bot.CreateForumTopic(ctx, &bot.CreateForumTopicParams{ChatID: chat, Name: topicName(title)})
	switch {
	case errors.Is(err, bot.ErrorBadRequest) || errors.Is(err, bot.ErrorForbidden):
		// "the chat is not a forum", "not enough rights to create a topic"
		return gateway.Address{}, fmt.Errorf("%w: Telegram refused a new topic (%s)", gateway.ErrNoPlace, err)
	case err != nil:
		return gateway.Address{}, fmt.Errorf("telegram: createForumTopic: %w", err)
	}
	a.log.Info("telegram: topic created", zap.Int64("chat", chat), zap.Int("topic", topic.MessageThreadID))
	return gateway.Address{Platform: PlatformName, Kind: gateway.LaneTopic, ChatID: near.ChatID,
		TopicID: strconv.Itoa(topic.MessageThreadID)}, nil
}

// topicName fits a title to Telegram's topic names: 1-128 characters.
func topicName(title string) string {
	if title == "" {
		return "fork"
	}
	if utf8.RuneCountInString(title) <= maxTopicName {
		return title
	}
	return string([]rune(title)[:maxTopicName-1]) + "…"
}

// RenamePlace renames a forum topic lane's topic (editForumTopic; the
// General topic's with editGeneralForumTopic). A private chat or a group
// is not renamed (the group's title is its members'); a bot without the
// right to manage topics is refused, ErrCannotRename. Telegram leaves a
// forum_topic_edited message from the bot, which handleTopicEdited drops.
func (a *Adapter) RenamePlace(ctx context.Context, addr gateway.Address, name string) error {
	if addr.Kind != gateway.LaneTopic {
		return fmt.Errorf("telegram: a %s: %w", addr.Kind, gateway.ErrCannotRename)
	}
	chat, err := strconv.ParseInt(addr.ChatID, 10, 64)
	if err != nil {
		return fmt.Errorf("telegram: chat id %q: %w", addr.ChatID, err)
	}
	topic, err := strconv.Atoi(addr.TopicID)
	if err != nil {
		return fmt.Errorf("telegram: topic id %q: %w", addr.TopicID, err)
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if addr.TopicID == generalTopic {
		_, err = a.bot.EditGeneralForumTopic(ctx, &bot.EditGeneralForumTopicParams{ChatID: chat, Name: topicName(name)})
	} else {
		_, err = a.bot.EditForumTopic(ctx, &bot.EditForumTopicParams{ChatID: chat, MessageThreadID: topic, Name: topicName(name)})
	}
	switch {
	case err != nil && strings.Contains(err.Error(), "TOPIC_NOT_MODIFIED"):
		return nil // it has that name already
	case errors.Is(err, bot.ErrorBadRequest) || errors.Is(err, bot.ErrorForbidden):
		return fmt.Errorf("telegram: editForumTopic (%s): %w", err, gateway.ErrCannotRename)
	case err != nil:
		return fmt.Errorf("telegram: editForumTopic: %w", err)
	}
	a.log.Info("telegram: topic renamed", zap.Int64("chat", chat), zap.Int("topic", topic))
	return nil
}

// handleTopicEdited tells the gateway that a member renamed a forum
// topic (forum_topic_edited with a name; an icon's change names nothing).
// The bot's own renames come back the same way and are dropped here.
func (a *Adapter) handleTopicEdited(ctx context.Context, sink gateway.Sink, m *models.Message) error {
	botID, _ := a.identity()
	if m.ForumTopicEdited.Name == "" || m.From == nil || m.From.ID == botID {
		return nil
	}
	addr, ok := addressOf(m.Chat, m.MessageThreadID, m.IsTopicMessage)
	if !ok || addr.Kind != gateway.LaneTopic {
		return nil
	}
	return a.deliver(ctx, sink, gateway.Inbound{
		Address: addr, MessageID: messageID(m.Chat.ID, m.ID), SenderID: strconv.FormatInt(m.From.ID, 10),
		SenderName: senderName(m.From), Title: m.ForumTopicEdited.Name, Renamed: true, ReceivedAt: a.now(),
	})
}
