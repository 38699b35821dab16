package gateway

import (
	"context"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"
)

// notify enqueues a gateway notice for a lane. inReplyTo names the inbound
// message it answers ("" for notices about the lane in general).
func (g *Gateway) notify(ctx context.Context, addr Address, inReplyTo, text string) {
	_, err := g.st.Enqueue(ctx, noticeFor(addr, inReplyTo, text))
	if err != nil {
		g.log.Error("outbox.enqueue_failed", zap.String("lane", addr.SessionKey()), zap.Error(err))
		g.sendDirect(ctx, addr, inReplyTo, "", text)
		return
	}
	g.wakeOutbox()
}

// noticeFor is the outbox row of a gateway notice for a lane.
func noticeFor(addr Address, inReplyTo, text string) store.OutboxMessage {
	return store.OutboxMessage{SessionKey: addr.SessionKey(), Platform: addr.Platform,
		Kind: string(addr.Kind), ChatID: addr.ChatID, TopicID: addr.TopicID, UserID: addr.UserID,
		Text: text, ReplyTo: inReplyTo}
}

// sendDirect is the last resort when the outbox cannot be written: one
// attempt straight to the platform, logged if it fails.
func (g *Gateway) sendDirect(ctx context.Context, addr Address, inReplyTo, editID, text string) {
	if !g.serves(addr.SessionKey()) {
		g.log.Warn("outbox.direct_not_owner", zap.String("lane", addr.SessionKey()))
		return
	}
	p, ok := g.platforms[addr.Platform]
	if !ok {
		g.log.Error("outbox.direct_no_platform", zap.String("platform", addr.Platform))
		return
	}
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	_, err := p.Send(sctx, Outbound{Address: addr, Kind: OutNotice, Text: text, ReplyTo: inReplyTo,
		InReplyTo: inReplyTo, EditID: editID})
	g.obs.Outbound(addr.Platform, err)
	if err != nil {
		g.log.Error("outbox.direct_failed", zap.String("lane", addr.SessionKey()), zap.Error(err))
	}
}

// wakeOutbox tells the deliverer that rows were added.
func (g *Gateway) wakeOutbox() { g.out.poke() }

// addressOf rebuilds a lane address from stored routing fields.
func addressOf(platform, kind, chatID, topicID, userID string) Address {
	return Address{Platform: platform, Kind: LaneKind(kind), ChatID: chatID, TopicID: topicID, UserID: userID}
}

// addressOfLane rebuilds the address of a stored lane.
func addressOfLane(l store.Lane) Address {
	return addressOf(l.Platform, l.Kind, l.ChatID, l.TopicID, l.UserID)
}
