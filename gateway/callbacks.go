package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"go.uber.org/zap"
)

// Button presses across nodes. A lane's pending approvals and questions,
// and the state a picker changes, live on the node running the lane; a
// press may reach another node (Telegram's elected poller, the Discord
// shard holding the guild). In cluster mode such a press is a call to the
// lane's owner, which handles it as if pressed there.

// OwnerCaller is the part of a LaneGate that reaches a lane's owner
// (cluster/node's Coordinator).
type OwnerCaller interface {
	// CallOwner returns the owner's reply, or an error wrapping
	// ErrNoLaneOwner when no other node runs the lane.
	CallOwner(ctx context.Context, sessionKey, op string, body []byte) ([]byte, error)
}

// ErrNoLaneOwner is OwnerCaller's error when no other node runs the lane.
var ErrNoLaneOwner = errors.New("gateway: no other node runs the lane")

// pressUnreachable is told for a press the lane's owner could not be
// asked about (the database away).
const pressUnreachable = "Could not reach the node running this conversation; press the button again in a moment."

// CallPrefix starts the ops of the gateway's calls (ServeCall's).
const CallPrefix = "gateway"

const callPress = CallPrefix + "/press"

// pressTimeout bounds a press handed to the lane's owner: the adapter
// acknowledges the press once Deliver returns, and Discord wants that
// within 3 s.
const pressTimeout = 2 * time.Second

// press is a button press as one node hands it to another: what a
// callback handler reads of an Inbound.
type press struct {
	Address     Address
	MessageID   string
	SenderID    string
	SenderName  string
	SenderRoles []string
	SenderAdmin bool
	ReplyTo     string
	ReceivedAt  time.Time
	Callback    string
}

func pressOf(in Inbound) press {
	return press{Address: in.Address, MessageID: in.MessageID, SenderID: in.SenderID, SenderName: in.SenderName,
		SenderRoles: in.SenderRoles, SenderAdmin: in.SenderAdmin, ReplyTo: in.ReplyTo, ReceivedAt: in.ReceivedAt,
		Callback: in.Callback}
}

func (p press) inbound() Inbound {
	return Inbound{Address: p.Address, MessageID: p.MessageID, SenderID: p.SenderID, SenderName: p.SenderName,
		SenderRoles: p.SenderRoles, SenderAdmin: p.SenderAdmin, ReplyTo: p.ReplyTo, ReceivedAt: p.ReceivedAt,
		Callback: p.Callback}
}

// pressed routes a button press: to the lane's owner when another node
// runs the lane, else here. A press the owner cannot be reached for is
// handled here, which tells the presser what it can (the request is no
// longer waiting here).
func (k *intake) pressed(ctx context.Context, in Inbound) {
	if k.forwardPress(ctx, in) {
		return
	}
	k.host.routeCallback(ctx, in, k.log)
}

func (k *intake) forwardPress(ctx context.Context, in Inbound) bool {
	key := in.Address.SessionKey()
	caller, ok := k.gate.(OwnerCaller)
	if !ok || k.gate.Serves(key) {
		return false
	}
	body, err := json.Marshal(pressOf(in))
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, pressTimeout)
	defer cancel()
	_, err = caller.CallOwner(ctx, key, callPress, body)
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		// The owner may still run it: saying here that nothing waits
		// could contradict it. A press that was lost is pressed again.
		k.log.Warn("inbound.press_owner_slow", zap.String("lane", key), zap.Duration("waited", pressTimeout))
		return true
	case errors.Is(err, ErrNoLaneOwner):
		return false // nobody else runs it: pressed here
	case err != nil:
		// Not "no longer waiting": the request may well wait there.
		k.log.Warn("inbound.press_not_forwarded", zap.String("lane", key), zap.Error(err))
		k.out.Notify(k.base, in.Address, "", pressUnreachable)
		return true
	}
	k.log.Info("inbound.press_forwarded", zap.String("lane", key), zap.String("callback", in.Callback))
	return true
}

// ServeCall runs a call another node made for lane sessionKey, which this
// node runs: a button pressed there.
func (g *Gateway) ServeCall(ctx context.Context, sessionKey, op string, body []byte) []byte {
	var p press
	switch {
	case op != callPress:
		g.log.Warn("cluster.call_unknown", zap.String("op", op))
	case json.Unmarshal(body, &p) != nil || p.Address.Validate() != nil || p.Address.SessionKey() != sessionKey:
		g.log.Warn("cluster.press_malformed", zap.String("lane", sessionKey))
	default:
		g.host.routeCallback(ctx, p.inbound(), g.log)
	}
	return []byte{}
}
