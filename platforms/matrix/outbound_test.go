package matrix

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/matrix/matrixtest"
)

// partLog records parts as the outbox would.
type partLog struct {
	mu    sync.Mutex
	parts map[int]string
}

func (p *partLog) RecordPart(_ context.Context, part int, id string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.parts == nil {
		p.parts = map[int]string{}
	}
	p.parts[part] = id
	return nil
}

func (p *partLog) DeferLastPart(part int, id string) {
	_ = p.RecordPart(context.Background(), part, id)
}

func roomAddr(room string) gateway.Address {
	return gateway.Address{Platform: PlatformName, Kind: gateway.LaneRoom, ChatID: room}
}

func bodies(evs []matrixtest.Event) []string {
	var out []string
	for _, e := range evs {
		b, _ := e.Content["body"].(string)
		out = append(out, b)
	}
	return out
}

func TestLongReplyIsSplitAndResumedWithTheSameTxn(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	text := strings.Repeat("line of text\n", 3000) // ~39 KB: three parts of 16 KiB
	log := &partLog{}
	out := gateway.Outbound{ID: 7, Address: roomAddr(room), Kind: gateway.OutReply, Text: text, Parts: log}
	srv.LoseAnswer("PUT send", 1) // part 0 is stored, its answer lost
	if _, err := h.a.Send(t.Context(), out); err == nil {
		t.Fatal("Send with a lost answer succeeded")
	}
	last, err := h.a.Send(t.Context(), out) // the outbox retries the row
	if err != nil {
		t.Fatal(err)
	}
	sent := srv.Sent(room, matrixtest.BotUser, "m.room.message")
	if strings.Join(bodies(sent), "") != text || len(sent) != 3 || sent[2].ID != last {
		t.Fatalf("%d events rejoining to the text: %v; last %s", len(sent), strings.Join(bodies(sent), "") == text, last)
	}
	if srv.TxnReplays() != 1 {
		t.Fatalf("txn replays = %d, want 1 (part 0 retried with its transaction id)", srv.TxnReplays())
	}
	if f, _ := sent[0].Content["format"].(string); f != "org.matrix.custom.html" {
		t.Fatalf("part 0 content %v: want HTML", sent[0].Content)
	}
}

func TestThreadRepliesCarryTheThreadRelation(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	root := srv.Post(room, alice, "root")
	addr := gateway.Address{Platform: PlatformName, Kind: gateway.LaneThread, ChatID: room, TopicID: root}
	if _, err := h.a.Send(t.Context(), gateway.Outbound{ID: 1, Address: addr, Kind: gateway.OutReply, Text: "**hi**"}); err != nil {
		t.Fatal(err)
	}
	e := srv.Sent(room, matrixtest.BotUser, "m.room.message")[0]
	rel, _ := e.Content["m.relates_to"].(map[string]any)
	if rel["rel_type"] != "m.thread" || rel["event_id"] != root || e.Content["body"] != "**hi**" ||
		!strings.Contains(e.Content["formatted_body"].(string), "<strong>hi</strong>") {
		t.Fatalf("content %v", e.Content)
	}
}

func TestPreviewEditsAreThrottledFinalReplyEdits(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	h := start(t, srv, newMemCursor(), newSink(), func(c *Config) { c.Now = clock })
	ctx := t.Context()
	id, err := h.a.Send(ctx, gateway.Outbound{Address: roomAddr(room), Kind: gateway.OutPreview, Text: "a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"ab", "abc"} { // within the interval: the second is skipped
		if err := h.a.Edit(ctx, roomAddr(room), id, text); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	now = now.Add(3 * time.Second)
	mu.Unlock()
	if err := h.a.Edit(ctx, roomAddr(room), id, "abcd"); err != nil {
		t.Fatal(err)
	}
	final, err := h.a.Send(ctx, gateway.Outbound{ID: 2, Address: roomAddr(room), Kind: gateway.OutReply, Text: "abcde", EditID: id})
	if err != nil || final != id {
		t.Fatalf("final = %s, %v; want the preview edited", final, err)
	}
	sent := srv.Sent(room, matrixtest.BotUser, "m.room.message")
	var edits []string
	for _, e := range sent[1:] {
		nc, _ := e.Content["m.new_content"].(map[string]any)
		edits = append(edits, nc["body"].(string))
	}
	if strings.Join(edits, ",") != "ab,abcd,abcde" {
		t.Fatalf("edits %v; want ab,abcd,abcde", edits)
	}
}

func TestPingIsANewEventNotAnEdit(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	ctx := t.Context()
	preview, _ := h.a.Send(ctx, gateway.Outbound{Address: roomAddr(room), Kind: gateway.OutPreview, Text: "thinking"})
	id, err := h.a.Send(ctx, gateway.Outbound{ID: 3, Address: roomAddr(room), Kind: gateway.OutReply, Text: "done", EditID: preview, Ping: alice})
	if err != nil || id == preview {
		t.Fatalf("ping reply = %s, %v; want a new event", id, err)
	}
	e, _ := srv.Event(id)
	m, _ := e.Content["m.mentions"].(map[string]any)
	if ids, _ := m["user_ids"].([]any); len(ids) != 1 || ids[0] != alice {
		t.Fatalf("mentions %v", e.Content["m.mentions"])
	}
	if len(srv.Sent(room, matrixtest.BotUser, "m.room.redaction")) != 1 {
		t.Fatal("the preview was not redacted")
	}
}

func TestRateLimitBecomesRetryAfter(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	later := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	h := start(t, srv, newMemCursor(), newSink(), func(c *Config) { c.Now = clock })
	for _, f := range []matrixtest.Failure{
		{Status: 429, Errcode: "M_LIMIT_EXCEEDED", RetryAfterMS: 1500},
		{Status: 429, Errcode: "M_LIMIT_EXCEEDED", Header: true, HeaderSecs: 3},
	} {
		srv.Fail("PUT send", f)
		_, err := h.a.Send(t.Context(), gateway.Outbound{ID: 9, Address: roomAddr(room), Kind: gateway.OutReply, Text: "x"})
		var ra *gateway.RetryAfterError
		want := time.Duration(f.RetryAfterMS)*time.Millisecond + time.Duration(f.HeaderSecs)*time.Second
		if !errors.As(err, &ra) || ra.After != want {
			t.Fatalf("Send under %+v = %v; want RetryAfterError after %s", f, err, want)
		}
		// Until then nothing is sent: the homeserver limits the user.
		before := srv.Requests("PUT send")
		later(want / 2)
		if _, err := h.a.Send(t.Context(), gateway.Outbound{ID: 9, Address: roomAddr(room), Kind: gateway.OutReply, Text: "x"}); !errors.As(err, &ra) ||
			ra.After != want-want/2 || srv.Requests("PUT send") != before {
			t.Fatalf("Send inside the wait = %v after %d requests; want RetryAfterError(%s) and no request", err, srv.Requests("PUT send")-before, want-want/2)
		}
		later(want)
	}
	srv.Fail("PUT send", matrixtest.Failure{Status: 403, Errcode: "M_FORBIDDEN"})
	if _, err := h.a.Send(t.Context(), gateway.Outbound{ID: 10, Address: roomAddr(room), Kind: gateway.OutReply, Text: "x"}); !errors.Is(err, gateway.ErrPermanent) {
		t.Fatalf("403 = %v; want ErrPermanent", err)
	}
	srv.Fail("PUT send", matrixtest.Failure{Status: 502})
	if _, err := h.a.Send(t.Context(), gateway.Outbound{ID: 11, Address: roomAddr(room), Kind: gateway.OutReply, Text: "x"}); err == nil || errors.Is(err, gateway.ErrPermanent) {
		t.Fatalf("502 = %v; want a retryable error", err)
	}
}

func TestTypingOpenPlaceAndDelete(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	ctx := t.Context()
	if err := h.a.Typing(ctx, roomAddr(room)); err != nil {
		t.Fatal(err)
	}
	if ty := srv.TypingSeen(); len(ty) != 1 || !ty[0].Typing || ty[0].User != matrixtest.BotUser {
		t.Fatalf("typing %+v", ty)
	}
	place, err := h.a.OpenPlace(ctx, roomAddr(room), "side quest")
	if err != nil || place.Kind != gateway.LaneThread || place.ChatID != room {
		t.Fatalf("OpenPlace = %+v, %v", place, err)
	}
	root, _ := srv.Event(place.TopicID)
	if !strings.Contains(root.Content["body"].(string), "side quest") {
		t.Fatalf("root %v", root.Content)
	}
	if err := h.a.Delete(ctx, place, place.TopicID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.a.OpenPlace(ctx, gateway.Address{Platform: "telegram", Kind: gateway.LaneDM, ChatID: "1"}, "x"); !errors.Is(err, gateway.ErrNoPlace) {
		t.Fatalf("OpenPlace off Matrix = %v", err)
	}
}

func TestReactionOnChoicesIsTheButtonPress(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	buttons := []gateway.Button{{ID: "approval:a1:accept", Label: "Approve"}, {ID: "approval:a1:decline", Label: "Decline"}}
	msg, err := h.a.SendButtons(t.Context(), gateway.Outbound{ID: 4, Address: roomAddr(room), Kind: gateway.OutNotice, Text: "Run ls?"}, buttons)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(srv.Sent(room, matrixtest.BotUser, "m.reaction")); n != 2 {
		t.Fatalf("%d seeded reactions, want 2", n)
	}
	h.stop() // the map must come from the event itself after a restart
	h = start(t, srv, h.cursor, h.sink, nil)
	srv.React(room, alice, msg, "❌")
	got := h.sink.waitN(t, 1)
	if got[0].Callback != "approval:a1:decline" || got[0].SenderID != alice || got[0].Address != roomAddr(room) {
		t.Fatalf("got %+v", got[0])
	}
	if err := h.a.EditButtons(t.Context(), roomAddr(room), msg, "Declined by alice", nil); err != nil {
		t.Fatal(err)
	}
	srv.React(room, alice, msg, "✅")
	srv.Post(room, alice, "marker")
	if got := h.sink.waitN(t, 2); got[1].Text != "marker" {
		t.Fatalf("a reaction after the decision was delivered: %+v", got[1])
	}
}

// TestPreviewOnTheWireOutlivesItsCaller: a preview send already at the
// homeserver when its caller gives up still returns its event id, so the
// final reply edits it instead of posting a second copy.
func TestPreviewOnTheWireOutlivesItsCaller(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	held := srv.Hold("PUT send", "streaming")
	ctx, cancel := context.WithCancel(t.Context())
	got := make(chan error, 1)
	go func() {
		_, err := h.a.Send(ctx, gateway.Outbound{Address: roomAddr(room), Kind: gateway.OutPreview, Text: "streaming"})
		got <- err
	}()
	<-held.Arrived()
	cancel()
	held.Release()
	if err := <-got; err != nil {
		t.Fatalf("Send of a preview stored after its caller gave up = %v; want its id", err)
	}
}
