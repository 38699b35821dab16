package slack

import (
	"context"
	"sync"
	"time"

	"github.com/slack-go/slack"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// typingStatus is the assistant thread status shown while Codex works.
const typingStatus = "is thinking…"

// typingEvery: a status lasts two minutes and Slack clears it when the
// app posts in the thread, so one call a minute per thread keeps it up
// while the gateway asks every few seconds.
const typingEvery = time.Minute

// typingState throttles the status per thread, and turns it off for the
// process when the app may not set it.
type typingState struct {
	mu       sync.Mutex
	last     map[string]time.Time
	disabled bool
}

func newTypingState() *typingState { return &typingState{last: map[string]time.Time{}} }

// due reports whether the thread's status should be set now, and takes
// the turn.
func (t *typingState) due(key string, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.disabled || now.Sub(t.last[key]) < typingEvery {
		return false
	}
	if len(t.last) > 1000 {
		clear(t.last)
	}
	t.last[key] = now
	return true
}

// posted forgets the thread's status: Slack cleared it with our post.
func (t *typingState) posted(channel, thread string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.last, channel+":"+thread)
}

func (t *typingState) disable() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	was := t.disabled
	t.disabled = true
	return !was
}

// Typing implements gateway.Typer as the thread's assistant status
// ("is thinking…"). Slack has no typing indicator for bots in a DM, so
// DMs show nothing.
func (a *Adapter) Typing(ctx context.Context, addr gateway.Address) error {
	channel, thread, err := target(addr)
	if err != nil || thread == "" || !a.typing.due(channel+":"+thread, a.cfg.Now()) {
		return err
	}
	err = a.call(ctx, "assistant.threads.setStatus", func(ctx context.Context) error {
		return a.api.SetAssistantThreadsStatusContext(ctx, slackStatus(channel, thread))
	})
	switch slackCode(err) {
	case "missing_scope", "not_allowed", "feature_not_enabled", "not_allowed_token_type":
		if a.typing.disable() {
			a.log.Warn("slack.typing_disabled: the app may not set a thread status", zap.Error(err))
		}
		return nil
	}
	return err
}

func slackStatus(channel, thread string) slack.AssistantThreadsSetStatusParameters {
	return slack.AssistantThreadsSetStatusParameters{ChannelID: channel, ThreadTS: thread, Status: typingStatus}
}
