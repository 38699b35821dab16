package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/go-telegram/bot"
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
