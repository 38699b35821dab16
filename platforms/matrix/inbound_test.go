package matrix

import (
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/matrix/matrixtest"
)

func TestMentionGatingInSharedRooms(t *testing.T) {
	srv := matrixtest.New(t)
	shared := joinedRoom(srv, bob)
	private := joinedRoom(srv)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	srv.Post(shared, alice, "chatting among us")
	srv.PostMentioning(shared, bob, "bot: please help", matrixtest.BotUser)
	srv.Post(shared, alice, "!new")
	srv.Post(private, alice, "just talking")
	srv.Post(shared, carol, "not allowed") // carol is no member and not allowed: nothing
	got := h.sink.waitN(t, 4)
	want := []struct {
		text               string
		mentioned, ambient bool
	}{
		{"chatting among us", false, true},
		{"please help", true, false},
		{"/new", true, false},
		{"just talking", false, false},
	}
	byText := map[string]gateway.Inbound{}
	for _, in := range got {
		byText[in.Text] = in
	}
	for _, w := range want {
		in, ok := byText[w.text]
		if !ok || in.Mentioned != w.mentioned || in.Ambient != w.ambient {
			t.Errorf("%q: got %+v (found %v); want mentioned=%v ambient=%v", w.text, in, ok, w.mentioned, w.ambient)
		}
	}
}

func TestBangCommandsBecomeSlashCommands(t *testing.T) {
	a := &Adapter{commands: map[string]bool{"new": true, "approve": true}}
	for in, want := range map[string]string{
		"!new":         "/new",
		"!approve a1":  "/approve a1",
		"/new":         "/new",
		"!important":   "!important",
		"hello !new":   "hello !new",
		"!":            "!",
		"!New project": "/New project",
	} {
		if got, _ := a.rewriteCommand(in); got != want {
			t.Errorf("rewriteCommand(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestThreadMessagesAndEditsReachTheThreadLane(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	root := srv.Post(room, alice, "root")
	msg := srv.PostInThread(room, alice, root, "in the thread")
	srv.Edit(room, alice, msg, "in the thread, edited")
	got := h.sink.waitN(t, 3)
	thread := gateway.Address{Platform: PlatformName, Kind: gateway.LaneThread, ChatID: room, TopicID: root}
	if got[1].Address != thread || got[1].Text != "in the thread" || got[1].ReplyTo != "" {
		t.Fatalf("thread message %+v; want lane %+v without a reply (the fallback)", got[1], thread)
	}
	if !got[2].Edited || got[2].MessageID != msg || got[2].Address != thread || got[2].Text != "in the thread, edited" {
		t.Fatalf("edit %+v", got[2])
	}
	if k := thread.SessionKey(); k != "v1:matrix:thread:"+room+":"+root {
		t.Fatalf("session key %q", k)
	}
}

func TestOwnEventsAndNoticesAreIgnored(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	srv.PostEvent(room, alice, "m.room.message", map[string]any{"msgtype": "m.notice", "body": "a bot's notice"})
	srv.Post(room, matrixtest.BotUser, "the bot itself")
	srv.Post(room, alice, "last")
	got := h.sink.waitN(t, 1)
	if len(got) != 1 || got[0].Text != "last" {
		t.Fatalf("got %+v", got)
	}
}

func TestFilesInAreDownloadedWithTheToken(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	srv.PostFile(room, alice, "m.image", "cat.png", "image/png", []byte("png bytes"))
	got := h.sink.waitN(t, 1)
	if len(got[0].Attachments) != 1 {
		t.Fatalf("got %+v", got[0])
	}
	att := got[0].Attachments[0]
	body, err := att.Open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	buf := make([]byte, 64)
	n, _ := body.Read(buf)
	if string(buf[:n]) != "png bytes" || att.Name != "cat.png" || att.MIME != "image/png" {
		t.Fatalf("attachment %+v read %q", att, buf[:n])
	}
}

func TestLegacyMediaFallback(t *testing.T) {
	srv := matrixtest.New(t)
	srv.UseLegacyMedia()
	room := joinedRoom(srv)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	srv.PostFile(room, alice, "m.file", "a.txt", "text/plain", []byte("legacy"))
	att := h.sink.waitN(t, 1)[0].Attachments[0]
	body, err := att.Open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer body.Close()
	buf := make([]byte, 16)
	if n, _ := body.Read(buf); string(buf[:n]) != "legacy" {
		t.Fatalf("read %q", buf[:n])
	}
}

func TestEncryptedRoomIsToldOnceAcrossRestarts(t *testing.T) {
	srv := matrixtest.New(t)
	cursor := newMemCursor()
	h := start(t, srv, cursor, newSink(), nil)
	room := srv.CreateRoom(matrixtest.RoomOptions{Creator: alice, Encrypted: true, Invite: []string{matrixtest.BotUser}})
	waitFor(t, srv, "the notice", func() bool { return len(srv.Sent(room, matrixtest.BotUser, "m.room.message")) == 1 })
	srv.PostEvent(room, alice, "m.room.encrypted", map[string]any{"algorithm": "m.megolm.v1.aes-sha2", "ciphertext": "x"})
	srv.Post(room, alice, "plain text in an encrypted room")
	h.stop()
	h = start(t, srv, cursor, h.sink, nil)
	srv.Post(room, alice, "again")
	other := joinedRoom(srv)
	srv.Post(other, alice, "marker")
	got := h.sink.waitN(t, 1)
	if len(got) != 1 || got[0].Text != "marker" {
		t.Fatalf("delivered %+v; want nothing from the encrypted room", got)
	}
	if n := len(srv.Sent(room, matrixtest.BotUser, "m.room.message")); n != 1 {
		t.Fatalf("%d notices in the encrypted room, want 1", n)
	}
}
