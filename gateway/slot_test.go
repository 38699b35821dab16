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
