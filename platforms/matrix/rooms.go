package matrix

import (
	"context"
	"errors"
	"sync"

	"go.uber.org/zap"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// roomInfo is what the adapter knows of one room.
type roomInfo struct {
	members   int // joined members; 0 = unknown (ask joined_members)
	encrypted bool
	told      bool // the encrypted-room notice was sent (or found recorded)
	checked   bool // encryption known: state seen, or asked the homeserver
	name      string
}

// roomCache holds roomInfo per room, learnt from /sync.
type roomCache struct {
	mu sync.Mutex
	m  map[id.RoomID]*roomInfo
}

func (c *roomCache) with(room id.RoomID, f func(*roomInfo)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[id.RoomID]*roomInfo{}
	}
	r := c.m[room]
	if r == nil {
		r = &roomInfo{}
		c.m[room] = r
	}
	f(r)
}

func (c *roomCache) encrypted(room id.RoomID) (enc bool) {
	c.with(room, func(r *roomInfo) { enc = r.encrypted })
	return enc
}

// learn reads what a sync says of a joined room: its member count, its
// name, and whether it is encrypted (its m.room.encryption state event).
func (c *roomCache) learn(room id.RoomID, jr *mautrix.SyncJoinedRoom) {
	c.with(room, func(r *roomInfo) {
		if n := jr.Summary.JoinedMemberCount; n != nil && *n > 0 {
			r.members = *n
		}
		if len(jr.State.Events) > 0 {
			r.checked = true // full state came: encryption is in it or not at all
		}
		for _, list := range [][]*event.Event{jr.State.Events, jr.Timeline.Events} {
			for _, e := range list {
				switch e.Type.Type {
				case event.StateEncryption.Type:
					if e.StateKey != nil { // an m.room.encrypted message proves nothing: any member can send one
						r.encrypted, r.checked = true, true
					}
				case event.StateRoomName.Type:
					if parsed(e, event.StateRoomName) {
						r.name = e.Content.AsRoomName().Name
					}
				case event.StateMember.Type:
					if jr.Summary.JoinedMemberCount == nil {
						r.members = 0 // stale: ask again when needed
					}
				}
			}
		}
	})
}

// shared reports whether room has more than two members (the bot and one
// person make a private room, where every message is for the bot).
func (a *Adapter) shared(ctx context.Context, room id.RoomID) bool {
	var n int
	a.rooms.with(room, func(r *roomInfo) { n = r.members })
	if n == 0 {
		ctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		resp, err := a.cli.JoinedMembers(ctx, room)
		if err != nil {
			// Unknown: treat as shared, so nothing said in a room full of
			// people is taken as addressed to the bot.
			a.log.Info("matrix: could not count a room's members", zap.Error(err))
			return true
		}
		n = len(resp.Joined)
		a.rooms.with(room, func(r *roomInfo) { r.members = n })
	}
	return n > 2
}

func (a *Adapter) roomName(room id.RoomID) (name string) {
	a.rooms.with(room, func(r *roomInfo) { name = r.name })
	return name
}

// handleInvite joins a room an allowed user invited the bot to (and, when
// matrix.allowed_rooms is set, only those rooms); other invites are
// rejected. A transient failure fails the batch, so the invite comes again.
func (a *Adapter) handleInvite(ctx context.Context, room id.RoomID, inv *mautrix.SyncInvitedRoom) error {
	var inviter id.UserID
	for _, e := range inv.State.Events {
		if e.Type.Type == event.StateMember.Type && e.StateKey != nil && *e.StateKey == string(a.self()) {
			inviter = e.Sender
		}
		if e.Type.Type == event.StateEncryption.Type {
			a.rooms.with(room, func(r *roomInfo) { r.encrypted = true })
		}
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if !a.allowedSender(string(inviter)) || !a.allowedRoom(string(room)) {
		a.log.Info("matrix.invite_refused: inviter or room not allowed", zap.String("room", string(room)),
			zap.String("inviter", string(inviter)))
		_, err := a.cli.LeaveRoom(ctx, room)
		if err != nil {
			a.log.Info("matrix: could not reject an invite", zap.Error(err))
		}
		return nil
	}
	if _, err := a.cli.JoinRoomByID(ctx, room); err != nil {
		err = mapError("join", err)
		if isPermanent(err) {
			a.log.Warn("matrix: could not join a room; invite skipped", zap.String("room", string(room)), zap.Error(err))
			return nil
		}
		return err
	}
	a.log.Info("matrix.joined", zap.String("room", string(room)), zap.String("inviter", string(inviter)))
	return nil
}

// checkEncrypted asks the homeserver, once per room and process, whether a
// room whose state this process has not seen is encrypted: after a
// restart, a sync carries only the new events, not the room's state.
func (a *Adapter) checkEncrypted(ctx context.Context, room id.RoomID) error {
	var checked bool
	a.rooms.with(room, func(r *roomInfo) { checked = r.checked })
	if checked {
		return nil
	}
	rctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	var c event.EncryptionEventContent
	err := a.cli.StateEvent(rctx, room, event.StateEncryption, "", &c)
	switch {
	case err == nil:
		a.rooms.with(room, func(r *roomInfo) { r.encrypted, r.checked = true, true })
	case errors.Is(err, mautrix.MNotFound):
		a.rooms.with(room, func(r *roomInfo) { r.checked = true })
	default:
		err = mapError("room state", err)
		if !isPermanent(err) {
			return err
		}
		// An answer no retry changes must not hold up every other room:
		// the room counts as unencrypted until its state says otherwise.
		a.log.Warn("matrix: could not read a room's encryption state", zap.String("room", string(room)), zap.Error(err))
		a.rooms.with(room, func(r *roomInfo) { r.checked = true })
	}
	return nil
}
