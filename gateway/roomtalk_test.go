package gateway

import (
	"context"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"
)

// TestRoomTalkReachesTheNextAddressedTurn: ambient messages of a group
// start no turn; the next addressed message's turn starts with them, with
// their authors, once; with GroupContext off they are dropped; a private
// chat keeps nothing.
func TestRoomTalkReachesTheNextAddressedTurn(t *testing.T) {
	for _, on := range []bool{true, false} {
		h := newHarness(t, func(c *Config) { c.GroupContext = on })
		h.start(t)
		group := Address{Platform: "test", Kind: LaneGroup, ChatID: "g1"}
		deliver := func(id, who, text string, ambient bool) {
			t.Helper()
			if _, err := h.g.Deliver(context.Background(), Inbound{Address: group, MessageID: id, SenderID: who,
				DisplayName: who, Text: text, Ambient: ambient}); err != nil {
				t.Fatal(err)
			}
		}
		deliver("a1", "Ben", "the deploy key is in the vault", true)
		deliver("a1", "Ben", "the deploy key is in the vault", true) // a redelivery
		deliver("a2", "Cleo", "and staging is down", true)
		deliver("m1", "Ana", "what did they say?", false)
		got := h.p.replyTo(t, "m1").Text
		const talk = "Messages since your last turn:\n[Ben]: the deploy key is in the vault\n[Cleo]: and staging is down\n\n"
		if on && got != "re: "+talk+"[Ana]: what did they say?" {
			t.Errorf("with group context the turn ran %q", got)
		}
		if !on && got != "re: [Ana]: what did they say?" {
			t.Errorf("without group context the turn ran %q", got)
		}
		deliver("m2", "Ana", "again?", false)
		if got := h.p.replyTo(t, "m2").Text; got != "re: [Ana]: again?" {
			t.Errorf("the room's talk was given twice: %q", got)
		}
		_, _, turns := h.cx.snapshot()
		if len(turns) != 2 {
			t.Errorf("turns %v, want only the two addressed messages", turns)
		}
	}
	if got := roomTalkText([]store.RoomLine{{Sender: "Ben", Text: strings.Repeat("x", roomTalkMax)}, {Sender: "Cleo", Text: "short"}}); got != roomTalkHeader+"\n[Cleo]: short" {
		t.Errorf("past the byte bound the oldest line must go: %q", got)
	}
}

// countingRoom counts the store's takes.
type countingRoom struct {
	*fakeStore
	takes int
}

func (c *countingRoom) TakeRoomLines(ctx context.Context, key string, limit int) ([]store.RoomLine, error) {
	c.takes++
	return c.fakeStore.TakeRoomLines(ctx, key, limit)
}

// TestRoomTalkAsksTheStoreOnlyWhenTalkMayBeKept: after a turn took a
// lane's talk, the next addressed messages skip the store's write until
// the room says something again; in cluster mode it always asks.
func TestRoomTalkAsksTheStoreOnlyWhenTalkMayBeKept(t *testing.T) {
	for _, shared := range []bool{false, true} {
		st := &countingRoom{fakeStore: newFakeStore()}
		r := &roomTalk{st: st, on: true, limit: 30, log: zap.NewNop(), shared: shared}
		ctx := context.Background()
		group := Address{Platform: "test", Kind: LaneGroup, ChatID: "g"}
		in := Inbound{Address: group, MessageID: "m", SenderID: "ana", Text: "hi"}
		r.withTalk(ctx, in, "[ana]: hi")
		r.withTalk(ctx, in, "[ana]: again")
		want := 1
		if shared {
			want = 2
		}
		if st.takes != want {
			t.Errorf("shared %v: %d takes for two turns with nothing said, want %d", shared, st.takes, want)
		}
		r.keep(ctx, Inbound{Address: group, MessageID: "a1", SenderID: "ben", Text: "by the way"})
		if got := r.withTalk(ctx, in, "[ana]: now?"); !strings.Contains(got, "[ben]: by the way") {
			t.Errorf("shared %v: after the room spoke the turn ran %q", shared, got)
		}
	}
}
