package matrix

import (
	"context"
	"errors"
	"strings"

	"go.uber.org/zap"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/gatewayd/gatewayd/gateway"
)

// handle turns one timeline event into what the gateway hears, if
// anything, and returns the lane of a delivered addressed message (for the
// read receipt). An error fails the batch: it is fetched again.
func (a *Adapter) handle(ctx context.Context, sink gateway.Sink, e *event.Event) (*gateway.Address, error) {
	if e.Sender == a.self() {
		if e.Type.Type == event.EventMessage.Type {
			a.own.put(string(e.ID), true)
		}
		return nil, nil
	}
	switch e.Type.Type {
	case event.StateEncryption.Type:
		// Only the state event marks a room encrypted: an m.room.encrypted
		// message can be sent by any member and would silence the room.
		if e.StateKey != nil {
			a.rooms.with(e.RoomID, func(r *roomInfo) { r.encrypted = true })
		}
		return nil, a.tellEncrypted(ctx, e.RoomID)
	case event.EventEncrypted.Type:
		if !a.allowed(e) {
			return nil, nil
		}
		return nil, a.tellEncrypted(ctx, e.RoomID)
	case event.EventMessage.Type:
		return a.handleMessage(ctx, sink, e)
	case event.EventReaction.Type:
		return nil, a.handleReaction(ctx, sink, e)
	}
	return nil, nil
}

// allowed: the sender is an allowed user and the room an allowed one;
// nothing else leaves the adapter (as on the other platforms).
func (a *Adapter) allowed(e *event.Event) bool {
	if a.allowedSender(string(e.Sender)) && a.allowedRoom(string(e.RoomID)) {
		return true
	}
	a.log.Debug("matrix: message from a user or room not allowed", zap.String("room", string(e.RoomID)))
	return false
}

func (a *Adapter) handleMessage(ctx context.Context, sink gateway.Sink, e *event.Event) (*gateway.Address, error) {
	if !parsed(e, event.EventMessage) || !a.allowed(e) {
		return nil, nil
	}
	c := e.Content.AsMessage()
	if c.MsgType == event.MsgNotice {
		return nil, nil // the bot convention: notices are never answered (no bot loops)
	}
	if c.RelatesTo.GetReplaceID() != "" {
		return nil, a.handleEdit(ctx, sink, e, c)
	}
	addr, ok := a.laneOf(e.RoomID, c.RelatesTo)
	if !ok {
		return nil, nil
	}
	in := a.inboundOf(ctx, e, c, addr)
	if in.Ambient && strings.TrimSpace(in.Text) == "" {
		return nil, nil // files said to the room are not kept
	}
	dup, err := sink.Deliver(ctx, in)
	if err != nil {
		return nil, err
	}
	if dup {
		a.log.Info("matrix: redelivered event recognised as a duplicate", zap.String("event_id", string(e.ID)))
	}
	a.delivered.put(string(e.ID), deliveredMsg{addr: addr, sender: e.Sender})
	if in.Ambient {
		return nil, nil
	}
	return &addr, nil
}

// laneOf is the lane of a message: its thread (m.thread) or its room. An
// id a session key cannot hold (a room v3 event id with '/') is skipped.
func (a *Adapter) laneOf(room id.RoomID, rel *event.RelatesTo) (gateway.Address, bool) {
	addr := gateway.Address{Platform: PlatformName, Kind: gateway.LaneRoom, ChatID: string(room)}
	if root := rel.GetThreadParent(); root != "" {
		addr.Kind, addr.TopicID = gateway.LaneThread, string(root)
	}
	if ValidRoomID(addr.ChatID) != nil || (addr.TopicID != "" && !validMatrixID(addr.TopicID)) {
		a.log.Warn("matrix: an id that cannot name a lane; message skipped", zap.String("room", string(room)))
		return gateway.Address{}, false
	}
	return addr, true
}

func (a *Adapter) inboundOf(ctx context.Context, e *event.Event, c *event.MessageEventContent, addr gateway.Address) gateway.Inbound {
	c.RemoveReplyFallback()
	files := a.attachmentsOf(c)
	text := c.Body
	if files != nil {
		text = c.GetCaption()
	}
	text, command := a.rewriteCommand(text)
	replyTo := c.RelatesTo.GetNonFallbackReplyTo()
	in := gateway.Inbound{
		Address: addr, MessageID: string(e.ID), SenderID: string(e.Sender), SenderName: localpart(e.Sender),
		Text: text, Attachments: files, ReceivedAt: a.cfg.Now(), ReplyTo: string(replyTo),
	}
	if addr.Kind == gateway.LaneRoom {
		in.Title = a.roomName(e.RoomID)
	}
	if replyTo != "" {
		if _, ours := a.own.get(string(replyTo)); ours {
			in.Quote = &gateway.Quote{FromBot: true}
		}
	}
	if !a.shared(ctx, e.RoomID) {
		return in // the bot and one person: everything is for the bot
	}
	in.Mentioned = command || a.mentions(c) || in.Quote != nil ||
		(addr.Kind == gateway.LaneThread && a.engaged(ctx, e.RoomID, id.EventID(addr.TopicID))) ||
		(a.offersChoices(addr) && isNumber(text))
	if in.Mentioned {
		in.Text = a.stripMention(in.Text)
	} else {
		in.Ambient, in.Attachments, in.Quote = true, nil, nil
	}
	return in
}

// mentions: m.mentions names the bot; from a client without m.mentions,
// the body names it (user id or localpart).
func (a *Adapter) mentions(c *event.MessageEventContent) bool {
	me := a.self()
	if c.Mentions != nil {
		return c.Mentions.Has(me)
	}
	return strings.Contains(c.Body, string(me)) || strings.Contains(strings.ToLower(c.Body), strings.ToLower(localpart(me)))
}

// stripMention removes a leading "bot:" or "@bot:server:" that clients put
// before the text when a user is mentioned.
func (a *Adapter) stripMention(text string) string {
	me := a.self()
	for _, name := range []string{string(me), localpart(me)} {
		if rest, ok := strings.CutPrefix(text, name); ok {
			rest = strings.TrimLeft(rest, ":, ")
			if rest != "" {
				return rest
			}
		}
	}
	return text
}

// rewriteCommand turns "!name args" into "/name args" for the gateway's
// commands (Matrix clients take "/" for themselves); "/name" arriving as
// text passes as it is. "!important" stays text.
func (a *Adapter) rewriteCommand(text string) (string, bool) {
	t := strings.TrimSpace(text)
	if len(t) < 2 || (t[0] != '!' && t[0] != '/') {
		return text, false
	}
	name, _, _ := strings.Cut(t[1:], " ")
	name, _, _ = strings.Cut(name, "\n")
	if !a.commands[strings.ToLower(name)] {
		return text, false
	}
	return "/" + t[1:], true
}

func localpart(u id.UserID) string {
	s := strings.TrimPrefix(string(u), "@")
	lp, _, _ := strings.Cut(s, ":")
	return lp
}

func isNumber(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 3 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// deliveredMsg is what an edit of a delivered message is checked against.
type deliveredMsg struct {
	addr   gateway.Address
	sender id.UserID
}

// handleEdit delivers an m.replace of an earlier message as an edit of
// that message, in the lane the message went to.
func (a *Adapter) handleEdit(ctx context.Context, sink gateway.Sink, e *event.Event, c *event.MessageEventContent) error {
	if _, done := a.edits.get(string(e.ID)); done {
		return nil
	}
	orig := c.RelatesTo.GetReplaceID()
	d, ok := a.delivered.get(string(orig))
	addr := d.addr
	if ok && (d.sender != e.Sender || id.RoomID(addr.ChatID) != e.RoomID) {
		// Only its author, in its room, edits a message: as when the
		// original is read from the homeserver (laneOfEvent).
		a.log.Info("matrix: edit of another user's or room's message ignored", zap.String("event_id", string(e.ID)))
		return nil
	}
	if !ok {
		var err error
		if addr, ok, err = a.laneOfEvent(ctx, e.RoomID, orig, e.Sender); err != nil || !ok {
			return err
		}
	}
	text := strings.TrimPrefix(c.Body, "* ")
	if c.NewContent != nil {
		text = c.NewContent.Body
	}
	in := gateway.Inbound{Address: addr, MessageID: string(orig), SenderID: string(e.Sender),
		SenderName: localpart(e.Sender), Text: text, Edited: true, ReceivedAt: a.cfg.Now()}
	if _, err := sink.Deliver(ctx, in); err != nil {
		return err
	}
	a.edits.put(string(e.ID), true)
	return nil
}

// laneOfEvent reads an earlier event to find its lane; ok is false when it
// is not a message by sender (an edit of someone else's message is not one).
func (a *Adapter) laneOfEvent(ctx context.Context, room id.RoomID, evID id.EventID, sender id.UserID) (gateway.Address, bool, error) {
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	orig, err := a.cli.GetEvent(rctx, room, evID)
	if err != nil {
		if isPermanent(mapError("event", err)) {
			return gateway.Address{}, false, nil
		}
		return gateway.Address{}, false, mapError("event", err)
	}
	if orig.Sender != sender || !parsed(orig, event.EventMessage) {
		return gateway.Address{}, false, nil
	}
	addr, ok := a.laneOf(room, orig.Content.AsMessage().RelatesTo)
	return addr, ok, nil
}

// parsed parses e's content as typ; content parsed before counts.
func parsed(e *event.Event, typ event.Type) bool {
	err := e.Content.ParseRaw(typ)
	return err == nil || errors.Is(err, event.ErrContentAlreadyParsed)
}
