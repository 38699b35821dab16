package matrixtest

import (
	"context"
	"errors"
	"testing"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"
)

func client(t *testing.T, s *Server) *mautrix.Client {
	t.Helper()
	cli, err := mautrix.NewClient(s.URL, BotUser, BotToken)
	if err != nil {
		t.Fatal(err)
	}
	return cli
}

// TestFakeThroughMautrix drives the fake with the real client: whoami,
// invite and join, a send repeated with one transaction id stored once,
// a long-poll released by a new event, redaction, and a 429 parsed.
func TestFakeThroughMautrix(t *testing.T) {
	s := New(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cli := client(t, s)
	who, err := cli.Whoami(ctx)
	if err != nil || who.UserID != BotUser {
		t.Fatalf("whoami = %+v, %v", who, err)
	}
	room := s.CreateRoom(RoomOptions{Creator: "@alice:fake.test", Invite: []string{BotUser}})
	first, err := cli.FullSyncRequest(ctx, mautrix.ReqSync{})
	if err != nil || first.Rooms.Invite[id.RoomID(room)] == nil {
		t.Fatalf("initial sync = %+v, %v; want the invite", first, err)
	}
	if _, err := cli.JoinRoomByID(ctx, id.RoomID(room)); err != nil {
		t.Fatal(err)
	}
	content := &event.MessageEventContent{MsgType: event.MsgText, Body: "hi"}
	var ids []id.EventID
	for range 2 {
		resp, err := cli.SendMessageEvent(ctx, id.RoomID(room), event.EventMessage, content, mautrix.ReqSendEvent{TransactionID: "t1"})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, resp.EventID)
	}
	if ids[0] != ids[1] || len(s.Sent(room, BotUser, "m.room.message")) != 1 || s.TxnReplays() != 1 {
		t.Fatalf("same txn twice: ids %v, %d stored, %d replays", ids, len(s.Sent(room, BotUser, "m.room.message")), s.TxnReplays())
	}
	now, err := cli.FullSyncRequest(ctx, mautrix.ReqSync{Since: first.NextBatch})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan *mautrix.RespSync)
	go func() {
		resp, _ := cli.FullSyncRequest(ctx, mautrix.ReqSync{Since: now.NextBatch, Timeout: 30000})
		done <- resp
	}()
	msg := s.Post(room, "@alice:fake.test", "hello")
	resp := <-done
	evs := resp.Rooms.Join[id.RoomID(room)].Timeline.Events
	if len(evs) != 1 || evs[0].ID != id.EventID(msg) {
		t.Fatalf("long-poll answered %d events, want the new message last", len(evs))
	}
	if _, err := cli.RedactEvent(ctx, id.RoomID(room), ids[0], mautrix.ReqRedact{TxnID: "r1"}); err != nil {
		t.Fatal(err)
	}
	s.Fail("PUT send", Failure{Status: 429, Errcode: "M_LIMIT_EXCEEDED", RetryAfterMS: 1500})
	_, err = cli.SendText(ctx, id.RoomID(room), "x")
	var he mautrix.HTTPError
	if !errors.Is(err, mautrix.MLimitExceeded) || !errors.As(err, &he) || he.RespError.ExtraData["retry_after_ms"] != float64(1500) {
		t.Fatalf("429: %v", err)
	}
	mxc := s.Upload([]byte("data"), "text/plain", "a.txt")
	uri, _ := id.ParseContentURI(mxc)
	body, err := cli.DownloadBytes(ctx, uri)
	if err != nil || string(body) != "data" {
		t.Fatalf("download = %q, %v", body, err)
	}
}
