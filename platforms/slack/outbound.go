package slack

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/slack-go/slack"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// Send implements gateway.Platform. Long text is split into parts of at
// most 3,000 runes, each one message in the lane (its thread); the last
// one's ts is returned. Each part is recorded through out.Parts as soon as
// Slack accepted it, and a retry of the outbox row skips the parts in
// out.SentParts. Slack has no idempotency key, so each part carries
// metadata naming its row and index, and a part whose post may have
// succeeded unseen (a lost answer here, or a row resumed by a later
// process after its last recorded part) is looked up before it is posted
// again.
func (a *Adapter) Send(ctx context.Context, out gateway.Outbound) (string, error) {
	return a.send(ctx, out, nil)
}

// SendButtons implements gateway.ButtonSender: the buttons go with the
// last part. Presses come back as Inbound.Callback with the presser as
// sender; the gateway decides whether they may decide.
func (a *Adapter) SendButtons(ctx context.Context, out gateway.Outbound, buttons []gateway.Button) (string, error) {
	actions, err := actionsFor(out.Question != nil, buttons)
	if err != nil {
		return "", err
	}
	return a.send(ctx, out, actions)
}

func (a *Adapter) send(ctx context.Context, out gateway.Outbound, actions *slack.ActionBlock) (string, error) {
	channel, thread, err := target(out.Address)
	if err != nil {
		return "", err
	}
	parts := splitMessage(out.Text, maxPartRunes)
	if out.Kind == gateway.OutPreview || out.Kind == gateway.OutProgress {
		parts = previewParts(out.Text) // one message that later edits replace
	}
	if len(parts) == 0 {
		if actions == nil {
			return "", fmt.Errorf("slack: send: empty message: %w", gateway.ErrPermanent)
		}
		parts = []string{"\u200b"} // buttons need some text
	}
	sent := out.SentParts
	for i := len(sent); i < len(parts); i++ {
		p := part{channel: channel, thread: thread, index: i, text: parts[i], resumed: i > 0 && i == len(out.SentParts)}
		if i == 0 {
			p.ping = out.Ping
		}
		if i == len(parts)-1 {
			p.actions = actions
		}
		if i > 0 {
			p.after = sent[i-1]
		}
		ts, err := a.sendPart(ctx, out, p)
		if err != nil {
			return "", err
		}
		if err := a.recordPart(ctx, out, i, len(parts), ts); err != nil {
			return "", err
		}
		sent = append(sent, ts)
	}
	a.typing.posted(channel, thread)
	return sent[len(sent)-1], nil
}

func (a *Adapter) recordPart(ctx context.Context, out gateway.Outbound, i, n int, ts string) error {
	if i == n-1 {
		return out.RecordLastPart(ctx, i, ts)
	}
	if err := out.RecordPart(ctx, i, ts); err != nil {
		return fmt.Errorf("slack: record part %d of outbox %d: %w", i, out.ID, err)
	}
	return nil
}

// part is one message of a delivery.
type part struct {
	channel, thread string
	index           int
	text, ping      string
	actions         *slack.ActionBlock
	after           string // the ts of the part before, if any
	resumed         bool   // an earlier attempt (maybe another process) stopped just before it
}

// sendPart posts one part or, for the first part of an edit, replaces the
// preview. A preview that cannot be edited any more (deleted) gets the
// reply as a new message: the answer must not be lost with it.
func (a *Adapter) sendPart(ctx context.Context, out gateway.Outbound, p part) (string, error) {
	blocks := partBlocks(p.text, p.ping, p.actions)
	text := fallbackText(p.text, p.ping)
	if p.index == 0 && out.EditID != "" {
		err := a.update(ctx, p.channel, out.EditID, blocks, text)
		if err == nil {
			return out.EditID, nil
		}
		if !uneditable(err) {
			return "", err
		}
		a.log.Info("slack.preview_uneditable: sending the reply as a new message",
			zap.String("ts", out.EditID), zap.Error(err))
	}
	if out.ID != 0 && (p.resumed || a.parts.ambiguous(out.ID, p.index) || (p.index == 0 && a.mayBeResumed(out))) {
		if ts, found := a.findPart(ctx, out, p); found {
			return ts, nil
		}
	}
	opts := []slack.MsgOption{slack.MsgOptionBlocks(blocks...), slack.MsgOptionText(text, false),
		slack.MsgOptionDisableLinkUnfurl(), slack.MsgOptionDisableMediaUnfurl()}
	if p.thread != "" {
		opts = append(opts, slack.MsgOptionTS(p.thread))
	}
	if out.ID != 0 {
		opts = append(opts, slack.MsgOptionMetadata(partMetadata(out.ID, p.index)))
	}
	ts, err := a.post(ctx, p.channel, opts)
	if err != nil && out.ID != 0 && ambiguousFailure(ctx, err) {
		a.parts.markAmbiguous(out.ID, p.index)
	}
	return ts, err
}

// mayBeResumed reports a row whose first part an earlier process may
// have posted unseen (killed between Slack's answer and the outbox's
// commit): a reply to a message that arrived before this process
// started. A new message costs no lookup; only the backlog of a restart
// does.
func (a *Adapter) mayBeResumed(out gateway.Outbound) bool {
	_, ts, ok := strings.Cut(out.InReplyTo, ":")
	if !ok {
		return false
	}
	n, err := tsMicros(ts)
	return err == nil && n < a.started.UnixMicro()
}

// post creates a message. A post is not started once ctx has ended, but
// one already on the wire is given sendGrace to finish: abandoning it
// would leave a message Slack may have created without its ts.
func (a *Adapter) post(ctx context.Context, channel string, opts []slack.MsgOption) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var ts string
	err := a.callIn(ctx, "chat.postMessage", channel, func(ctx context.Context) error {
		sctx, done := inFlight(ctx)
		defer done()
		var err error
		_, ts, err = a.api.PostMessageContext(sctx, channel, opts...)
		return err
	})
	return ts, err
}

// update replaces a message's blocks and text, under the chat.update
// limiter (tier 3: previews of every lane share it).
func (a *Adapter) update(ctx context.Context, channel, ts string, blocks []slack.Block, text string) error {
	return a.call(ctx, "chat.update", func(ctx context.Context) error {
		_, _, _, err := a.api.UpdateMessageContext(ctx, channel, ts, slack.MsgOptionBlocks(blocks...),
			slack.MsgOptionText(text, false))
		return err
	})
}

// uneditable: the message to edit is gone or not ours to edit.
func uneditable(err error) bool {
	switch slackCode(err) {
	case "message_not_found", "cant_update_message", "edit_window_closed":
		return true
	}
	return false
}

// sendGrace is how long a post already on the wire may outlive its
// caller's context (the other adapters' grace).
const sendGrace = 5 * time.Second

func inFlight(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(sendGrace, cancel) })
	return c, func() {
		stop()
		cancel()
	}
}

// Edit implements gateway.Platform (streamed previews, the work view, an
// answered question). A text longer than one part is cut and marked "…";
// the final reply goes through Send with EditID, which splits it. The
// message's buttons, if any, are removed: chat.update replaces blocks.
func (a *Adapter) Edit(ctx context.Context, addr gateway.Address, messageID, text string) error {
	return a.edit(ctx, addr, messageID, text, nil)
}

func (a *Adapter) edit(ctx context.Context, addr gateway.Address, messageID, text string, actions *slack.ActionBlock) error {
	channel, _, err := target(addr)
	if err != nil {
		return err
	}
	parts := previewParts(text)
	if len(parts) == 0 {
		if actions == nil {
			return fmt.Errorf("slack: edit: empty text: %w", gateway.ErrPermanent)
		}
		parts = []string{"\u200b"}
	}
	return a.update(ctx, channel, messageID, partBlocks(parts[0], "", actions), fallbackText(parts[0], ""))
}

// EditButtons implements gateway.ButtonEditor: the message's text and
// buttons are replaced; no buttons removes them, so an answered question
// cannot be answered again.
func (a *Adapter) EditButtons(ctx context.Context, addr gateway.Address, messageID, text string, buttons []gateway.Button) error {
	var actions *slack.ActionBlock
	if len(buttons) > 0 {
		var err error
		if actions, err = actionsFor(false, buttons); err != nil {
			return err
		}
	}
	return a.edit(ctx, addr, messageID, text, actions)
}

// Delete implements gateway.Deleter; a message already gone counts as
// deleted.
func (a *Adapter) Delete(ctx context.Context, addr gateway.Address, messageID string) error {
	channel, _, err := target(addr)
	if err != nil {
		return err
	}
	err = a.call(ctx, "chat.delete", func(ctx context.Context) error {
		_, _, err := a.api.DeleteMessageContext(ctx, channel, messageID)
		return err
	})
	if slackCode(err) == "message_not_found" {
		return nil
	}
	return err
}

// previewParts cuts a preview to one part, marked with "…" when the
// text goes on.
func previewParts(text string) []string {
	parts := splitMessage(text, maxPartRunes-1)
	if len(parts) > 1 {
		parts = []string{parts[0] + "…"}
	}
	return parts
}

// target is where a lane's messages go: its channel, and its thread.
func target(addr gateway.Address) (channel, thread string, err error) {
	if err := addr.Validate(); err != nil {
		return "", "", fmt.Errorf("slack: %w: %w", err, gateway.ErrPermanent)
	}
	if addr.Platform != PlatformName {
		return "", "", fmt.Errorf("slack: address for platform %q: %w", addr.Platform, gateway.ErrPermanent)
	}
	if addr.Kind == gateway.LaneThread {
		return addr.ChatID, addr.TopicID, nil
	}
	return addr.ChatID, "", nil
}
