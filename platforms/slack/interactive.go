package slack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/slack-go/slack"
	"github.com/slack-go/slack/socketmode"
	"go.uber.org/zap"
)

// Button presses and slash commands are acked the moment they arrive:
// Slack wants the ack within 3 s and never redelivers them, so they must
// not wait behind the message worker (which holds an envelope until its
// message is committed, and runs backfill). They are handled in order on
// their own worker.

const (
	// interactQueueSize bounds presses and commands waiting for their
	// worker; past it the user is told to try again.
	interactQueueSize = 64
	// maxBusyReplies bounds the "busy" answers in flight at once.
	maxBusyReplies = 8
	// busyAnswer is what a press or command past a full queue answers.
	busyAnswer = "The bot is busy; please try again in a moment."
	// respondTimeout bounds one answer posted to a response_url.
	respondTimeout = 10 * time.Second
)

// onInteractive acks a press or slash command at once (a slash command
// answerable without I/O answers in the ack) and queues the rest.
func (a *Adapter) onInteractive(ctx context.Context, ev socketmode.Event) {
	if ev.Type == socketmode.EventTypeSlashCommand {
		if cmd, ok := ev.Data.(slack.SlashCommand); ok {
			if answer, done := a.slashAtOnce(cmd); done {
				a.ack(ctx, ev.Request.EnvelopeID, slashAnswer(answer))
				return
			}
		}
	}
	a.ack(ctx, ev.Request.EnvelopeID, nil)
	j := job{req: ev.Request, kind: ev.Type, data: ev.Data}
	select {
	case a.interactions <- j:
	default:
		a.busy(ctx, j)
	}
}

// busy tells the user of a press or command past a full queue to try
// again, off the reader; when too many such answers are in flight it only
// logs the drop.
func (a *Adapter) busy(ctx context.Context, j job) {
	select {
	case a.busyReplies <- struct{}{}:
	default:
		a.log.Warn("slack.interaction_dropped: queue full and busy answers saturated", zap.String("type", string(j.kind)))
		return
	}
	a.log.Warn("slack.interaction_busy: queue full", zap.String("type", string(j.kind)))
	go func() {
		defer func() { <-a.busyReplies }()
		switch d := j.data.(type) {
		case slack.SlashCommand:
			a.respond(ctx, d.ResponseURL, busyAnswer)
		case slack.InteractionCallback:
			addr := pressedLane(d)
			a.ephemeral(ctx, addr.ChatID, d.User.ID, addr.TopicID, busyAnswer)
		}
	}()
}

// interact handles queued presses and commands one at a time.
func (a *Adapter) interact(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case j := <-a.interactions:
			switch d := j.data.(type) {
			case slack.InteractionCallback:
				a.handleInteraction(ctx, d)
			case slack.SlashCommand:
				a.respond(ctx, d.ResponseURL, a.handleSlash(ctx, d))
			}
		}
	}
}

// respond posts a slash command's answer, seen only by its invoker, to
// the command's response_url (the ack is gone by then).
func (a *Adapter) respond(ctx context.Context, url, text string) {
	if url == "" || text == "" {
		return
	}
	if err := a.postResponse(ctx, url, text); err != nil {
		a.log.Warn("slack.respond_failed", zap.Error(err))
	}
}

func (a *Adapter) postResponse(ctx context.Context, url, text string) error {
	body, err := json.Marshal(slashAnswer(text))
	if err != nil {
		return fmt.Errorf("slack: response: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), respondTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("slack: response: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := a.http.Do(req)
	if err != nil {
		return fmt.Errorf("slack: response: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("slack: response: HTTP %d", resp.StatusCode)
	}
	return nil
}
