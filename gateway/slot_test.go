package gateway

import (
	"context"
	"testing"
	"time"
)

// typingPlatform records the lanes it showed typing in.
type typingPlatform struct {
	*fakePlatform
	typing chan string // ChatID of each Typing call
}

func (p *typingPlatform) Typing(_ context.Context, addr Address) error {
	p.typing <- addr.ChatID
	return nil
}

// waitTyping waits until every lane in lanes showed typing, in any order.
func (p *typingPlatform) waitTyping(t *testing.T, lanes ...string) {
	t.Helper()
	want := make(map[string]bool, len(lanes))
	for _, l := range lanes {
		want[l] = true
	}
	deadline := time.After(5 * time.Second)
	for len(want) > 0 {
		select {
		case got := <-p.typing:
			delete(want, got)
		case <-deadline:
			t.Fatalf("no typing in lanes %v", want)
		}
	}
}

// A turn that waits for a concurrency slot shows typing at once, while the
// turns holding the slots still run, and it runs when a slot frees.
func TestTurnWaitingForASlotShowsTypingAtOnce(t *testing.T) {
	h, tp, gt := oneSlotTaken(t)
	h.send(t, "b", "b1", "b-one")
	h.send(t, "c", "c1", "c-one")
	tp.waitTyping(t, "b", "c")
	select {
	case got := <-gt.entered:
		t.Fatalf("turn %q started while the only slot was taken", got)
	default:
	}
	gt.open("a-one")
	gt.open("b-one")
	gt.open("c-one")
	// The lanes' replies may arrive in any order.
	want := map[string]string{"a1": "re: a-one", "b1": "re: b-one", "c1": "re: c-one"}
	for len(want) > 0 {
		o := h.p.next(t)
		if text, ok := want[o.InReplyTo]; ok && o.Kind == OutReply {
			if o.Text != text {
				t.Errorf("reply to %s = %q, want %q", o.InReplyTo, o.Text, text)
			}
			delete(want, o.InReplyTo)
		}
	}
}

// A turn that showed typing while it waited for its slot does not show it
// again as soon as it runs: the streamer's first refresh is due a
// TypingInterval after the waiting typing (an hour here), so a burst costs
// one typing call per message, not two.
func TestTurnThatWaitedDoesNotRepeatTypingAtStart(t *testing.T) {
	h, tp, gt := oneSlotTaken(t)
	tp.waitTyping(t, "a") // the first turn's streamer: it did not wait
	h.send(t, "b", "b1", "b-one")
	tp.waitTyping(t, "b") // waiting for the slot
	gt.open("a-one")
	gt.open("b-one")
	// A reply is sent after its turn's streamer stopped, and a streamer's
	// first tick runs before it can stop: every typing call is in by now.
	for seen := map[string]bool{}; !seen["b1"]; {
		if o := h.p.next(t); o.Kind == OutReply {
			seen[o.InReplyTo] = true
		}
	}
	for {
		select {
		case lane := <-tp.typing:
			if lane == "b" {
				t.Errorf("lane b showed typing again when its turn started")
			}
		default:
			return
		}
	}
}

// oneSlotTaken starts a gateway with a single turn slot, typing refreshed
// only hourly and turns held at a gate, and lane a's turn "a-one" holding
// the slot.
func oneSlotTaken(t *testing.T) (*harness, *typingPlatform, *gate) {
	t.Helper()
	h := newHarness(t, func(c *Config) { c.MaxConcurrentTurns = 1; c.TypingInterval = time.Hour })
	tp := &typingPlatform{fakePlatform: h.p, typing: make(chan string, 64)}
	h.g.AddPlatform(tp)
	gt := newGate()
	h.cx.run = gt.run
	h.start(t)
	h.send(t, "a", "a1", "a-one")
	if got := <-gt.entered; got != "a-one" {
		t.Fatalf("first turn %q, want a-one", got)
	}
	return h, tp, gt
}
