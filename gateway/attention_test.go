package gateway

import (
	"context"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// TestALongTurnsAnswerNotifiesItsRequester: past lanes.notify_after the
// answer pings the requester in a shared room; a short turn's does not,
// nor does a private chat's name anyone (the platforms' tests check that
// the answer is a new message, not an edit of the preview).
func TestALongTurnsAnswerNotifiesItsRequester(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.NotifyAfter = time.Minute })
	h.cx.run = func(_ context.Context, _, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		if text != "[Ana]: quick" {
			h.clock.Advance(2 * time.Minute)
		}
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "done"}, nil
	}
	h.start(t)
	group := Address{Platform: "test", Kind: LaneGroup, ChatID: "g1"}
	dm := Address{Platform: "test", Kind: LaneDM, ChatID: "d1"}
	for _, tc := range []struct {
		addr     Address
		id, text string
		ping     string
	}{
		{group, "m1", "long work", "ana"},
		{group, "m2", "quick", ""},
		{dm, "m3", "long work", ""},
	} {
		if _, err := h.g.Deliver(context.Background(), Inbound{Address: tc.addr, MessageID: tc.id, SenderID: "ana", DisplayName: "Ana", Text: tc.text}); err != nil {
			t.Fatal(err)
		}
		o := h.p.replyTo(t, tc.id)
		if o.Ping != tc.ping {
			t.Errorf("%s %q: the answer pings %q, want %q", tc.addr.Kind, tc.text, o.Ping, tc.ping)
		}
	}
}
