package preview

import (
	"context"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/chat"
)

// eventPlatform records previews, edits and typing as events.
type eventPlatform struct{ events chan string }

func (p *eventPlatform) Post(_ context.Context, _ chat.Address, replyTo, text string) (string, error) {
	p.events <- "post:" + replyTo + ":" + text
	return "p1", nil
}

func (p *eventPlatform) Edit(_ context.Context, _ chat.Address, id, text string) error {
	p.events <- "edit:" + id + ":" + text
	return nil
}

func (p *eventPlatform) Typing(context.Context, chat.Address) error {
	p.events <- "typing"
	return nil
}

func (p *eventPlatform) expect(t *testing.T, want string) {
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

func (p *eventPlatform) expectNone(t *testing.T) {
	t.Helper()
	select {
	case e := <-p.events:
		t.Errorf("unexpected event %q", e)
	default:
	}
}

type nopObserver struct{}

func (nopObserver) PlatformError(string, string) {}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) advance(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// start starts a streamer whose ticks the test sends.
func start(t *testing.T, p *eventPlatform, clk *clock, ticks chan time.Time) *Streamer {
	t.Helper()
	c := Config{Base: context.Background(), PreviewInterval: time.Second, TypingInterval: 4 * time.Second,
		Ticker: func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} },
		Obs:    nopObserver{}, Log: zap.NewNop(), Now: clk.now}
	return Start(c, p, p, chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}, "m1", time.Time{})
}

func TestHeldPreviewStaysWhereItWas(t *testing.T) {
	p := &eventPlatform{events: make(chan string, 64)}
	clk := &clock{t: time.Unix(1000, 0)}
	ticks := make(chan time.Time)
	s := start(t, p, clk, ticks)
	p.expect(t, "typing") // at once
	s.Delta("Sending it")
	ticks <- time.Time{}
	p.expect(t, "post:m1:Sending it")
	s.Hold()
	s.Delta(" now.")
	clk.advance(time.Second)
	ticks <- time.Time{}
	ticks <- time.Time{} // taken only once the previous tick is done
	if id := s.Stop(); id != "p1" {
		t.Errorf("preview id %q, want p1", id)
	}
	p.expectNone(t)
}

func TestNoPlatformShowsNothing(t *testing.T) {
	c := Config{Base: context.Background(), Obs: nopObserver{}, Log: zap.NewNop(), Now: time.Now}
	s := Start(c, nil, nil, chat.Address{Platform: "gone"}, "m1", time.Time{})
	s.Delta("text")
	if id := s.Stop(); id != "" {
		t.Errorf("preview id %q without a platform, want none", id)
	}
}
