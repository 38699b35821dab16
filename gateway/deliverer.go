package gateway

import (
	"context"

	"github.com/gatewayd/gatewayd/store"
)

// Delivered marks a deferred outbox row sent: the platform handed it over
// (outbox's deferred delivery).
func (g *Gateway) Delivered(ctx context.Context, id int64, platformMessageID string) error {
	return g.out.Delivered(ctx, id, platformMessageID)
}

// Redeliver makes the lane's held rows due again.
func (g *Gateway) Redeliver(ctx context.Context, sessionKey string) error {
	return g.out.Redeliver(ctx, sessionKey)
}

// addressOf rebuilds a lane address from stored routing fields.
func addressOf(platform, kind, chatID, topicID, userID string) Address {
	return Address{Platform: platform, Kind: LaneKind(kind), ChatID: chatID, TopicID: topicID, UserID: userID}
}

// addressOfLane rebuilds the address of a stored lane.
func addressOfLane(l store.Lane) Address {
	return addressOf(l.Platform, l.Kind, l.ChatID, l.TopicID, l.UserID)
}
