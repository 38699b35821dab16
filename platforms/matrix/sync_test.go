package matrix

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/matrix/matrixtest"
)

func TestFirstSyncDeliversNoHistoryThenRoomMessages(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	srv.Post(room, alice, "old history")
	h := start(t, srv, newMemCursor(), newSink(), nil)
	srv.Post(room, alice, "hello")
	got := h.sink.waitN(t, 1)
	want := gateway.Address{Platform: PlatformName, Kind: gateway.LaneRoom, ChatID: room}
	if len(got) != 1 || got[0].Text != "hello" || got[0].Address != want || got[0].SenderID != alice {
		t.Fatalf("delivered %+v; want only hello in %+v", got, want)
	}
	if got[0].Address.SessionKey() != "v1:matrix:room:"+room {
		t.Fatalf("session key %q", got[0].Address.SessionKey())
	}
	waitFor(t, srv, "the read receipt", func() bool {
		r := srv.ReceiptsSeen()
		return len(r) == 1 && r[0].Event == got[0].MessageID && r[0].Thread == "main"
	})
}

func TestInviteFromAllowedUserIsJoinedOthersRejected(t *testing.T) {
	srv := matrixtest.New(t)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	good := srv.CreateRoom(matrixtest.RoomOptions{Creator: alice, Invite: []string{matrixtest.BotUser}})
	bad := srv.CreateRoom(matrixtest.RoomOptions{Creator: carol, Invite: []string{matrixtest.BotUser}})
	waitFor(t, srv, "join and reject", func() bool {
		return srv.Membership(good, matrixtest.BotUser) == "join" && srv.Membership(bad, matrixtest.BotUser) == "leave"
	})
	// What alice said between the invite and the join is for the bot.
	srv.Post(good, alice, "after join")
	got := h.sink.waitN(t, 1)
	if got[0].Text != "after join" {
		t.Fatalf("got %+v", got)
	}
}

func TestMessagesAfterInviteBeforeJoinAreDelivered(t *testing.T) {
	srv := matrixtest.New(t)
	snk := newSink()
	snk.fail = 0
	room := srv.CreateRoom(matrixtest.RoomOptions{Creator: alice})
	h := start(t, srv, newMemCursor(), snk, nil)
	h.stop() // the invite and a message arrive while the bot is down
	srv.Post(room, alice, "before the invite")
	srv.Invite(room, alice, matrixtest.BotUser)
	srv.Post(room, alice, "between invite and join")
	start(t, srv, h.cursor, snk, nil)
	waitFor(t, srv, "join", func() bool { return srv.Membership(room, matrixtest.BotUser) == "join" })
	srv.Post(room, alice, "after")
	got := snk.waitN(t, 2)
	if got[0].Text != "between invite and join" || got[1].Text != "after" || len(snk.all()) != 2 {
		t.Fatalf("got %+v", snk.all())
	}
}

func TestFailedDeliverRefetchesTheBatchAndTheTokenWaits(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	snk := newSink()
	h := start(t, srv, newMemCursor(), snk, nil)
	saved := h.cursor.get("matrix.next_batch:" + matrixtest.BotUser)
	snk.mu.Lock()
	snk.fail = 3
	snk.mu.Unlock()
	srv.Post(room, alice, "one")
	srv.Post(room, alice, "two")
	got := snk.waitN(t, 2)
	if got[0].Text != "one" || got[1].Text != "two" {
		t.Fatalf("got %+v", got)
	}
	if saved == "" {
		t.Fatal("first sync saved no token")
	}
}

func TestSyncTokenIsSavedOnlyAfterCommit(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	cursor := newMemCursor()
	snk := newSink()
	h := start(t, srv, cursor, snk, nil)
	snk.mu.Lock()
	snk.fail = 1 << 30 // the store is down: nothing commits
	snk.mu.Unlock()
	before := cursor.get("matrix.next_batch:" + matrixtest.BotUser)
	srv.Post(room, alice, "uncommitted")
	waitFor(t, srv, "a few failed attempts", func() bool { return srv.Requests("GET sync") >= 5 })
	h.stop()
	if after := cursor.get("matrix.next_batch:" + matrixtest.BotUser); after != before {
		t.Fatalf("token moved from %q to %q past an uncommitted event", before, after)
	}
	snk.mu.Lock()
	snk.fail = 0
	snk.mu.Unlock()
	start(t, srv, cursor, snk, nil)
	if got := snk.waitN(t, 1); got[0].Text != "uncommitted" {
		t.Fatalf("after restart got %+v", got)
	}
}

func TestHungSyncReconnectsWithoutLoss(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	srv.HoldSyncs(2)
	srv.Post(room, alice, "during the hang")
	if got := h.sink.waitN(t, 1); got[0].Text != "during the hang" {
		t.Fatalf("got %+v", got)
	}
}

func TestLimitedTimelineIsBackfilledInOrder(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	snk := newSink()
	h := start(t, srv, newMemCursor(), snk, nil)
	h.stop()
	for i := range 130 { // more than the filter's 100: the sync is limited
		srv.Post(room, alice, fmt.Sprint(i))
	}
	start(t, srv, h.cursor, snk, nil)
	got := snk.waitN(t, 130)
	for i, in := range got {
		if in.Text != fmt.Sprint(i) {
			t.Fatalf("inbound %d is %q: out of order or missing", i, in.Text)
		}
	}
}

func TestRunFailsOnARejectedToken(t *testing.T) {
	srv := matrixtest.New(t)
	cfg := testConfig(srv, newMemCursor())
	cfg.AccessToken = "wrong"
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = a.Run(context.Background(), newSink())
	if !errors.Is(err, gateway.ErrConfig) || !contains(err.Error(), "matrix.access_token") || contains(err.Error(), "wrong") {
		t.Fatalf("Run = %v; want ErrConfig naming matrix.access_token, not the token", err)
	}
	cfg = testConfig(srv, newMemCursor())
	cfg.UserID = "@other:fake.test"
	a, _ = New(cfg)
	if err := a.Run(context.Background(), newSink()); !errors.Is(err, gateway.ErrConfig) || !contains(err.Error(), "matrix.user_id") {
		t.Fatalf("Run = %v; want ErrConfig naming matrix.user_id", err)
	}
}

func TestNewRefusesBadConfigNamingTheKey(t *testing.T) {
	srv := matrixtest.New(t)
	for key, edit := range map[string]func(*Config){
		"matrix.homeserver":    func(c *Config) { c.Homeserver = "ftp://x" },
		"matrix.access_token":  func(c *Config) { c.AccessToken = " " },
		"matrix.user_id":       func(c *Config) { c.UserID = "bot" },
		"matrix.allowed_users": func(c *Config) { c.AllowedUsers = []string{"alice"} },
		"matrix.allowed_rooms": func(c *Config) { c.AllowedRooms = []string{"#room:x"} },
	} {
		cfg := testConfig(srv, newMemCursor())
		edit(&cfg)
		if _, err := New(cfg); !errors.Is(err, gateway.ErrConfig) || !contains(err.Error(), key) {
			t.Errorf("%s: New = %v", key, err)
		}
	}
}

func contains(s, sub string) bool { return len(sub) == 0 || (len(s) >= len(sub) && index(s, sub) >= 0) }

func index(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
