package gateway

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// editPlatform records typing, previews and edits as events.
type editPlatform struct {
	*fakePlatform
	events chan string
}

func (p *editPlatform) Send(ctx context.Context, out Outbound) (string, error) {
	if out.Kind == OutPreview {
		p.events <- "send:" + out.Text
		return "p1", nil
	}
	return p.fakePlatform.Send(ctx, out)
}

func (p *editPlatform) Edit(_ context.Context, _ Address, id, text string) error {
	p.events <- "edit:" + id + ":" + text
	return nil
}

func (p *editPlatform) Typing(context.Context, Address) error {
	p.events <- "typing"
	return nil
}

func (p *editPlatform) expect(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-p.events:
		if got != want {
			t.Fatalf("platform event %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no platform event, want %q", want)
	}
}

func TestStreamerThrottlesEditsAndRefreshesTyping(t *testing.T) {
	clock := newFakeClock()
	p := &editPlatform{fakePlatform: newFakePlatform(), events: make(chan string, 64)}
	g, err := New(Config{Logger: zaptest.NewLogger(t), Now: clock.Now}, newFakeStore(), newFakeCodex())
	if err != nil {
		t.Fatal(err)
	}
	g.AddPlatform(p)
	ticks := make(chan time.Time)
	g.newTicker = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	s := g.newStreamer(apiAddr("a"), "m1")
	p.expect(t, "typing") // at once
	s.delta("Hel")
	ticks <- time.Time{}
	p.expect(t, "send:Hel")
	s.delta("lo")
	ticks <- time.Time{} // same instant: throttled
	clock.Advance(time.Second)
	ticks <- time.Time{}
	p.expect(t, "edit:p1:Hello")
	clock.Advance(3 * time.Second)
	ticks <- time.Time{} // 4 s since the first typing, nothing new to show
	p.expect(t, "typing")
	if id := s.stop(); id != "p1" {
		t.Errorf("preview id %q, want p1", id)
	}
	select {
	case e := <-p.events:
		t.Errorf("unexpected event %q", e)
	default:
	}
}

func TestFinalReplyReplacesPreview(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.PreviewInterval = time.Millisecond })
	p := &editPlatform{fakePlatform: h.p, events: make(chan string, 64)}
	h.g.platforms["test"] = p
	streamed := make(chan struct{})
	h.cx.run = func(_ context.Context, _, _ string, ev codex.TurnEvents) (codex.TurnResult, error) {
		ev.Delta("partial")
		<-streamed
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "partial and final"}, nil
	}
	h.start(t)
	h.send(t, "a", "m1", "go")
	for e := range p.events {
		if e == "send:partial" {
			break
		}
	}
	close(streamed)
	if o := h.p.replyTo(t, "m1"); o.EditID != "p1" || o.Text != "partial and final" {
		t.Errorf("final reply %+v, want it to edit preview p1", o)
	}
}
