package gateway

import (
	"context"
	"testing"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/feature/roomtalk"
)

// TestRoomTalkReachesTheNextAddressedTurn: ambient messages of a group
// start no turn; the next addressed message's turn starts with them, with
// their authors, once; with lanes.group_context off they are dropped; a private
// chat keeps nothing.
func TestRoomTalkReachesTheNextAddressedTurn(t *testing.T) {
	for _, on := range []bool{true, false} {
		st := newFakeStore()
		h := newHarnessOn(t, st, func(c *Config) { c.Features = []ext.Feature{roomtalk.New(on, 0, st)} })
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

}
