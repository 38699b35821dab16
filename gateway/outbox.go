package gateway

import (
	"context"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"
)

// The deliverer is also how the core and its modules speak to a lane:
// notices go through the store's outbox (durable, in lane order); one that
// cannot be written is sent straight to the platform as a last resort.

// notify enqueues a gateway notice for a lane. inReplyTo names the inbound
// message it answers ("" for notices about the lane in general).
func (d *deliverer) notify(ctx context.Context, addr Address, inReplyTo, text string) {
	_, err := d.st.Enqueue(ctx, noticeFor(addr, inReplyTo, text))
	if err != nil {
		d.log.Error("outbox.enqueue_failed", zap.String("lane", addr.SessionKey()), zap.Error(err))
		d.sendDirect(ctx, addr, inReplyTo, "", text)
		return
	}
	d.poke()
}

// noticeFor is the outbox row of a gateway notice for a lane.
func noticeFor(addr Address, inReplyTo, text string) store.OutboxMessage {
	return store.OutboxMessage{SessionKey: addr.SessionKey(), Platform: addr.Platform,
		Kind: string(addr.Kind), ChatID: addr.ChatID, TopicID: addr.TopicID, UserID: addr.UserID,
		Text: text, ReplyTo: inReplyTo}
}

// sendDirect is the last resort when the outbox cannot be written: one
// attempt straight to the platform, logged if it fails.
func (d *deliverer) sendDirect(ctx context.Context, addr Address, inReplyTo, editID, text string) {
	if d.serves != nil && !d.serves(addr.SessionKey()) {
		d.log.Warn("outbox.direct_not_owner", zap.String("lane", addr.SessionKey()))
		return
	}
	p, ok := d.platforms[addr.Platform]
	if !ok {
		d.log.Error("outbox.direct_no_platform", zap.String("platform", addr.Platform))
		return
	}
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	_, err := p.Send(sctx, Outbound{Address: addr, Kind: OutNotice, Text: text, ReplyTo: inReplyTo,
		InReplyTo: inReplyTo, EditID: editID})
	d.obs.Outbound(addr.Platform, err)
	if err != nil {
		d.log.Error("outbox.direct_failed", zap.String("lane", addr.SessionKey()), zap.Error(err))
	}
}

// sendWithButtons shows text with buttons where the platform has them, and
// as a plain notice (through the outbox) elsewhere or if that fails. The
// buttons are sent directly, as approval questions are: the outbox keeps
// no buttons, and the text alone still answers.
func (d *deliverer) sendWithButtons(ctx context.Context, addr Address, replyTo, text string, buttons []Button) {
	bs, ok := d.platforms[addr.Platform].(ButtonSender)
	if !ok || len(buttons) == 0 {
		d.notify(ctx, addr, replyTo, text)
		return
	}
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	_, err := bs.SendButtons(sctx, Outbound{Address: addr, Kind: OutNotice, Text: text, ReplyTo: replyTo, InReplyTo: replyTo}, buttons)
	d.obs.Outbound(addr.Platform, err)
	if err != nil {
		d.log.Warn("project.buttons_failed", zap.String("lane", addr.SessionKey()), zap.Error(err))
		d.notify(ctx, addr, replyTo, text)
	}
}

// addressOf rebuilds a lane address from stored routing fields.
func addressOf(platform, kind, chatID, topicID, userID string) Address {
	return Address{Platform: platform, Kind: LaneKind(kind), ChatID: chatID, TopicID: topicID, UserID: userID}
}

// addressOfLane rebuilds the address of a stored lane.
func addressOfLane(l store.Lane) Address {
	return addressOf(l.Platform, l.Kind, l.ChatID, l.TopicID, l.UserID)
}
