package matrix

import (
	"errors"
	"strings"
	"testing"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/matrix/matrixtest"
)

func botBodiesWith(srv *matrixtest.Server, room, sub string) int {
	n := 0
	for _, b := range bodies(srv.Sent(room, matrixtest.BotUser, "m.room.message")) {
		if strings.Contains(b, sub) {
			n++
		}
	}
	return n
}

// TestOpenPlaceWithALostAnswerMakesOneRoot: the homeserver stored the
// thread root but the answer was lost; the retry reuses the transaction
// id, so one root is posted and its id returned.
func TestOpenPlaceWithALostAnswerMakesOneRoot(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	srv.LoseAnswer("PUT send", 1)
	place, err := h.a.OpenPlace(t.Context(), roomAddr(room), "side quest")
	if err != nil {
		t.Fatal(err)
	}
	if n := botBodiesWith(srv, room, "side quest"); n != 1 {
		t.Fatalf("%d thread roots", n)
	}
	if root, ok := srv.Event(place.TopicID); !ok || !strings.Contains(root.Content["body"].(string), "side quest") {
		t.Fatalf("root %+v", root)
	}
}

// TestEditRetriedAfterALostAnswerIsStoredOnce: a retried Edit carries the
// same transaction id; an edit to another text does not.
func TestEditRetriedAfterALostAnswerIsStoredOnce(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	h := start(t, srv, newMemCursor(), newSink(), nil)
	ctx := t.Context()
	msg, err := h.a.Send(ctx, gateway.Outbound{ID: 3, Address: roomAddr(room), Kind: gateway.OutNotice, Text: "v1", Parts: &partLog{}})
	if err != nil {
		t.Fatal(err)
	}
	srv.LoseAnswer("PUT send", 1)
	if err := h.a.Edit(ctx, roomAddr(room), msg, "v2"); err == nil {
		t.Fatal("Edit with a lost answer succeeded")
	}
	if err := h.a.Edit(ctx, roomAddr(room), msg, "v2"); err != nil {
		t.Fatal(err)
	}
	if err := h.a.Edit(ctx, roomAddr(room), msg, "v3"); err != nil {
		t.Fatal(err)
	}
	if n, m := botBodiesWith(srv, room, "* v2"), botBodiesWith(srv, room, "* v3"); n != 1 || m != 1 {
		t.Fatalf("v2 edits %d, v3 edits %d; want one each", n, m)
	}
}

// TestReactionInARefetchedBatchIsDeliveredOnce: a batch that failed after
// a button press is fetched again; the press is not delivered twice.
func TestReactionInARefetchedBatchIsDeliveredOnce(t *testing.T) {
	srv := matrixtest.New(t)
	room := joinedRoom(srv)
	snk := newSink()
	h := start(t, srv, newMemCursor(), snk, nil)
	buttons := []gateway.Button{{ID: "approval:a1:accept", Label: "Approve"}}
	msg, err := h.a.SendButtons(t.Context(), gateway.Outbound{ID: 4, Address: roomAddr(room), Kind: gateway.OutNotice, Text: "Run ls?"}, buttons)
	if err != nil {
		t.Fatal(err)
	}
	presses, failed := 0, false
	snk.mu.Lock()
	snk.hook = func(in gateway.Inbound) error {
		if in.Callback != "" {
			presses++
		}
		if in.Text == "after" && !failed {
			failed = true
			return errors.New("store down once")
		}
		return nil
	}
	snk.mu.Unlock()
	srv.React(room, alice, msg, "✅")
	srv.Post(room, alice, "after")
	snk.waitN(t, 2)
	snk.mu.Lock()
	defer snk.mu.Unlock()
	if presses != 1 || !failed {
		t.Fatalf("the press reached Deliver %d times (batch failed: %v)", presses, failed)
	}
}

func TestContentURIOutsideTheSpecIsNotDownloaded(t *testing.T) {
	for uri, ok := range map[string]bool{
		"mxc://fake.test/AbC_-9":       true,
		"mxc://[::1]:8448/abc":         true,
		"mxc://fake.test/a%2F..%2Fb":   false,
		"mxc://fake.test/a?b=c":        false,
		"mxc://fake.test@evil.test/ab": false,
	} {
		c := &event.MessageEventContent{MsgType: event.MsgFile, Body: "f", URL: id.ContentURIString(uri)}
		att := (&Adapter{}).attachmentsOf(c)
		if len(att) != 1 || (att[0].Err == nil) != ok {
			t.Errorf("%s: %+v", uri, att)
		}
	}
}
