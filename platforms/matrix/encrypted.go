package matrix

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"go.uber.org/zap"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

// encryptedNotice is what an encrypted room is told, once.
const encryptedNotice = "This room is end-to-end encrypted, so gatewayd cannot read it. " +
	"Create a room with encryption turned off (Element: + → New room → turn off " +
	"\"Enable end-to-end encryption\"), invite %s and talk there."

// tellEncrypted tells an encrypted room, once across restarts, that the
// bot cannot read it; nothing else happens there. The notice carries a
// transaction id fixed per room and the cursor is set after it, so a crash
// between the two cannot post it twice within the homeserver's txn window.
func (a *Adapter) tellEncrypted(ctx context.Context, room id.RoomID) error {
	if !a.rooms.encrypted(room) || !a.allowedRoom(string(room)) {
		return nil // a room not allowed is never spoken to
	}
	var told bool
	a.rooms.with(room, func(r *roomInfo) { told = r.told })
	if told {
		return nil
	}
	name := "matrix.e2ee_told:" + string(room)
	if _, ok, err := a.cfg.Cursor.Cursor(ctx, name); err != nil {
		return err
	} else if ok {
		a.rooms.with(room, func(r *roomInfo) { r.told = true })
		return nil
	}
	c := &event.MessageEventContent{MsgType: event.MsgNotice, Body: fmt.Sprintf(encryptedNotice, a.self()),
		Mentions: &event.Mentions{}}
	sum := sha256.Sum256([]byte(room))
	if _, err := a.post(ctx, room, event.EventMessage, c, "gwd-e2ee-"+hex.EncodeToString(sum[:12])); err != nil {
		if !isPermanent(err) {
			return err
		}
		// A room that refuses the notice (muted: 403) must not hold up
		// the sync of every other room; it is not asked again this run.
		a.log.Warn("matrix: could not tell an encrypted room; notice skipped", zap.String("room", string(room)), zap.Error(err))
		a.rooms.with(room, func(r *roomInfo) { r.told = true })
		return nil
	}
	if err := a.cfg.Cursor.SetCursor(ctx, name, "1"); err != nil {
		return err
	}
	a.rooms.with(room, func(r *roomInfo) { r.told = true })
	a.log.Info("matrix.encrypted_room_told", zap.String("room", string(room)))
	return nil
}
