package matrix

import (
	"fmt"
	"testing"

	"github.com/gatewayd/gatewayd/platforms/matrix/matrixtest"
)

// TestPermanentErrorInOneRoomDoesNotStallOthers: a room that refuses the
// encrypted-room notice (403, as when the bot is muted) must not stop the
// sync: room B's messages still arrive.
func TestPermanentErrorInOneRoomDoesNotStallOthers(t *testing.T) {
	srv := matrixtest.New(t)
	roomA := srv.CreateRoom(matrixtest.RoomOptions{Creator: alice, Encrypted: true}) // sorts before B
	roomB := joinedRoom(srv)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	srv.Fail("PUT send", matrixtest.Failure{Status: 403, Errcode: "M_FORBIDDEN", Count: 1 << 20})
	srv.Join(roomA, matrixtest.BotUser)
	srv.Post(roomB, alice, "still heard")
	if got := h.sink.waitN(t, 1); got[0].Text != "still heard" {
		t.Fatalf("got %+v", got)
	}
}

// TestFirstSyncSurvivesARefusedNotice: the first sync commits although an
// encrypted room refuses the notice.
func TestFirstSyncSurvivesARefusedNotice(t *testing.T) {
	srv := matrixtest.New(t)
	roomB := joinedRoom(srv)
	srv.CreateRoom(matrixtest.RoomOptions{Creator: alice, Encrypted: true, Members: []string{matrixtest.BotUser}})
	srv.Fail("PUT send", matrixtest.Failure{Status: 403, Errcode: "M_FORBIDDEN", Count: 1 << 20})
	h := start(t, srv, newMemCursor(), newSink(), nil)
	srv.Post(roomB, alice, "heard")
	if got := h.sink.waitN(t, 1); got[0].Text != "heard" {
		t.Fatalf("got %+v", got)
	}
}

// TestEncryptedMessageFromAnyoneDoesNotSilenceARoom: only the room's
// m.room.encryption state marks it encrypted; a member who is not allowed
// sending an m.room.encrypted event changes nothing.
func TestEncryptedMessageFromAnyoneDoesNotSilenceARoom(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv, carol)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	srv.PostEvent(room, carol, "m.room.encrypted", map[string]any{"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "x"})
	srv.Post(room, alice, "still heard")
	if got := h.sink.waitN(t, 1); got[0].Text != "still heard" {
		t.Fatalf("got %+v", got)
	}
	if sent := srv.Sent(room, matrixtest.BotUser, "m.room.message"); len(sent) != 0 {
		t.Fatalf("the bot posted %d messages (an encrypted-room notice?)", len(sent))
	}
}

// TestEncryptedRoomNotAllowedIsNotTold: with matrix.allowed_rooms set, an
// encrypted room outside it gets no notice on the first sync.
func TestEncryptedRoomNotAllowedIsNotTold(t *testing.T) {
	srv := matrixtest.New(t)
	other := srv.CreateRoom(matrixtest.RoomOptions{Creator: alice, Encrypted: true, Members: []string{matrixtest.BotUser}})
	room := joinedRoom(srv)
	h := start(t, srv, newMemCursor(), newSink(), func(c *Config) { c.AllowedRooms = []string{room} })
	srv.Post(room, alice, "sentinel")
	h.sink.waitN(t, 1)
	if sent := srv.Sent(other, matrixtest.BotUser, "m.room.message"); len(sent) != 0 {
		t.Fatalf("a room not allowed was told: %+v", sent)
	}
}

// TestNullRoomsAndEventsAreSkipped: JSON nulls where a room or an event
// belongs (in /sync and in a gap's /messages) are skipped, not a panic.
func TestNullRoomsAndEventsAreSkipped(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	snk := newSink()
	h := start(t, srv, newMemCursor(), snk, nil)
	srv.InjectNulls(1)
	srv.Post(room, alice, "one")
	if got := snk.waitN(t, 1); got[0].Text != "one" {
		t.Fatalf("got %+v", got)
	}
	h.stop()
	for i := range 130 { // a limited timeline: the gap is filled by /messages
		srv.Post(room, alice, fmt.Sprint(i))
	}
	srv.InjectNulls(3)
	start(t, srv, h.cursor, snk, nil)
	if got := snk.waitN(t, 131); got[130].Text != "129" {
		t.Fatalf("last of %d is %q", len(got), got[len(got)-1].Text)
	}
}

// TestRoomIDWithColonDollarNamesNoLane: "thread:<room>:<$root>" keys are
// split at the first ":$", so a room id holding ":$" could share a key
// with another room's thread; such a room names no lane.
func TestRoomIDWithColonDollarNamesNoLane(t *testing.T) {
	if err := ValidRoomID("!a:$b"); err == nil {
		t.Fatal(`ValidRoomID("!a:$b") accepted`)
	}
	srv := matrixtest.New(t)
	a, err := New(testConfig(srv, newMemCursor()))
	if err != nil {
		t.Fatal(err)
	}
	if addr, ok := a.laneOf("!a:$b", nil); ok {
		t.Fatalf("lane %+v for a room id with \":$\"", addr)
	}
	if _, ok := a.laneOf("!a:b", nil); !ok {
		t.Fatal("a plain room id names no lane")
	}
}

// TestEditsOnlyByTheAuthorInTheRoom: another allowed user cannot rewrite
// a delivered message, nor can an m.replace sent in another room.
func TestEditsOnlyByTheAuthorInTheRoom(t *testing.T) {
	srv := matrixtest.New(t)
	roomA := joinedRoom(srv, bob)
	roomB := joinedRoom(srv, bob)
	snk := newSink()
	start(t, srv, newMemCursor(), snk, nil)
	msg := srv.Post(roomA, alice, "original")
	snk.waitN(t, 1)
	srv.Edit(roomA, bob, msg, "bob's rewrite")
	srv.Edit(roomB, alice, msg, "edit from another room")
	srv.Post(roomB, alice, "sentinel") // after the edit in its room
	srv.Edit(roomA, alice, msg, "alice's edit")
	snk.waitN(t, 3)
	edits := 0
	for _, in := range snk.all() {
		if in.Edited && (in.Text != "alice's edit" || in.Address.ChatID != roomA) {
			t.Fatalf("delivered %+v", in)
		}
		if in.Edited {
			edits++
		}
	}
	if edits != 1 {
		t.Fatalf("%d edits delivered; want alice's", edits)
	}
}
