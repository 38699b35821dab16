package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/gatewayd/gatewayd/store"
)

// Triggers start turns no one typed: a schedule's firing, a
// webhook's delivery. Each is an inbox row like a message, keyed by an id
// the trigger gives (a firing's schedule and due time, a delivery id), so
// the database runs it once; it queues behind a running turn whatever the
// busy mode, its text is never a command, and its reply says what started
// it.

// ErrUnknownLane: the session key names no lane gatewayd has seen (and is
// not an API lane, which needs none).
var ErrUnknownLane = errors.New("gateway: no such lane")

// Trigger is one piece of work for a lane that no one typed.
type Trigger struct {
	Lane string // the lane's session key
	// ID identifies the delivery: a second Trigger with the same ID is a
	// duplicate and runs nothing.
	ID   string
	Text string // the turn's text
	// Origin is shown before the reply ("🪝 github").
	Origin string
	// SenderID and SenderName are who the turn is attributed to; in a
	// shared room they decide its approvals and questions.
	SenderID, SenderName string
}

// triggerStore is what triggers read and write.
type triggerStore interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
}

// Trigger records t as a turn of its lane and queues it. It reports a
// duplicate (the ID ran before) and the inbox row's id.
func (g *Gateway) Trigger(ctx context.Context, t Trigger) (inboundID int64, duplicate bool, err error) {
	if t.ID == "" || strings.TrimSpace(t.Text) == "" {
		return 0, false, errors.New("gateway: a trigger needs an id and text")
	}
	if g.in.sched.stopping.Load() {
		return 0, false, ErrShuttingDown
	}
	addr, err := laneAddressOf(ctx, g.st, t.Lane)
	if err != nil {
		return 0, false, err
	}
	rec := store.Inbound{Platform: addr.Platform, MessageID: t.ID, SessionKey: addr.SessionKey(),
		SenderID: t.SenderID, SenderName: t.SenderName, Text: t.Text, ReceivedAt: g.now(),
		Lane: laneKey(addr), Origin: t.Origin}
	return g.in.trigger(ctx, addr, rec)
}

// laneAddressOf is the address of the lane key names: a stored lane's, or
// an API lane's, which its key spells out.
func laneAddressOf(ctx context.Context, st triggerStore, key string) (Address, error) {
	sl, err := st.Lane(ctx, key)
	if err == nil {
		return addressOfLane(sl), nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return Address{}, err
	}
	if name, ok := strings.CutPrefix(key, SessionKeyVersion+":api:"); ok && name != "" && !strings.Contains(name, ":") {
		return Address{Platform: "api", Kind: LaneAPI, ChatID: name}, nil
	}
	return Address{}, fmt.Errorf("%w: %q", ErrUnknownLane, key)
}

// trigger records a trigger's row, in the lane's intake order, and runs it.
func (k *intake) trigger(ctx context.Context, addr Address, rec store.Inbound) (int64, bool, error) {
	id, dup, journal, release, err := k.record(ctx, addr, rec)
	defer release()
	if err != nil {
		return 0, false, fmt.Errorf("gateway: record trigger: %w", err)
	}
	if dup {
		k.obs.Duplicate(addr.Platform)
		return id, true, nil
	}
	k.obs.Inbound(addr.Platform)
	if k.gate != nil {
		k.gate.Recorded(rec.SessionKey)
		return id, false, nil
	}
	k.dispatch(k.base, recorded{addr: addr, inboundID: id, msgID: rec.MessageID, text: rec.Text, journal: journal,
		sender: rec.SenderID, senderName: rec.SenderName, origin: rec.Origin})
	return id, false, nil
}

// recordTriggered records a trigger whose row write stores (with what
// the trigger commits with it), in the lane's intake order, and runs the
// row rec it wrote.
func (k *intake) recordTriggered(ctx context.Context, addr Address, rec *store.Inbound,
	write func(ctx context.Context) (id int64, stored bool, err error)) (int64, bool, error) {
	l := k.enterIntake(addr)
	defer k.leaveIntake(l)
	id, stored, err := write(ctx)
	if err != nil || !stored {
		return id, stored, err
	}
	k.obs.Inbound(addr.Platform)
	if k.gate != nil {
		k.gate.Recorded(rec.SessionKey)
		return id, true, nil
	}
	k.dispatch(k.base, recorded{addr: addr, inboundID: id, msgID: rec.MessageID, text: rec.Text,
		sender: rec.SenderID, senderName: rec.SenderName, origin: rec.Origin})
	return id, true, nil
}

// makerAllowed says whether the maker of a triggered turn (a schedule's)
// in the lane at addr may still use it, by the platform's current
// allowlist. A maker the platform cannot judge (no id, a Discord role)
// keeps it running, as before allowlists were checked here.
func (k *intake) makerAllowed(addr Address, maker string) bool {
	if maker == "" {
		return true
	}
	if m, ok := k.platforms[addr.Platform].(MakerAuthorizer); ok {
		allowed, known := m.AuthorizeMaker(addr, maker)
		return allowed || !known
	}
	return k.authorized(Inbound{Address: addr, SenderID: maker})
}

// withOrigin starts a triggered turn's reply with what started it.
func withOrigin(origin, text string) string {
	if origin == "" {
		return text
	}
	return origin + ": " + text
}
