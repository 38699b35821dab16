package telegram_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/feature/usage"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

// fakeClock is the gateway's clock (gateway.Config.Now, the features'
// host Now): the wall clock moved ahead by the test, so what the store
// stamps with the wall clock (the outbox's due times) stays due.
type fakeClock struct {
	mu    sync.Mutex
	ahead time.Duration
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.ahead)
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.ahead += d
	c.mu.Unlock()
}

// heldTimers records the usage feature's timers instead of arming them;
// the test fires them.
type heldTimers struct {
	mu  sync.Mutex
	fns []func()
}

func (h *heldTimers) after(_ time.Duration, f func()) func() bool {
	h.mu.Lock()
	h.fns = append(h.fns, f)
	h.mu.Unlock()
	return func() bool { return true }
}

func (h *heldTimers) armed() []func() {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]func(){}, h.fns...)
}

// TestEndToEndDailyBudget runs turns through the real app-server whose
// fake model reports 1,050 tokens each. The lane's spend adds up to the
// turns' tokens in the store (per lane and per sender) and in /status; the
// turn that reaches lanes.budget_tokens_per_day finishes, the messages
// after it wait and the lane is told once with the figures; when the fake
// clock reaches the next day and the day's timer fires, they run in order.
func TestEndToEndDailyBudget(t *testing.T) {
	t.Parallel() // its own fake Bot API, store and codex home
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	dm, alice := aliceDM(srv)
	perTurn := codextest.Usage{InputTokens: 1000, CachedInputTokens: 400, OutputTokens: 50}
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		return codextest.Reply{Text: "ECHO: " + req.LastUserText(), Usage: perTurn}
	})
	clock, timers := &fakeClock{}, &heldTimers{}
	world.Features.Budget = usage.Budget{PerDay: 2000}
	world.Features.UsageTimers = timers.after
	d := startStackWith(t, ctx, world, srv, gateway.Config{Now: clock.Now})
	say := func(text string) { srv.Text(dm, alice, 0, text, nil) }
	replied := func(text string) func() bool {
		return func() bool { return len(containing(srv.Messages(dm.ID, 0), "ECHO: "+text)) > 0 }
	}

	say("one")
	srv.WaitFor(30*time.Second, "the reply to one", replied("one"))
	say("two") // reaches the budget: it still runs
	srv.WaitFor(30*time.Second, "the reply to two", replied("two"))
	say("three")
	say("four")
	srv.WaitFor(30*time.Second, "the budget notice", func() bool {
		return len(containing(srv.Messages(dm.ID, 0), "daily token budget is used up")) > 0
	})
	say("/status")
	srv.WaitFor(30*time.Second, "the status during the wait", func() bool {
		return len(containing(srv.Messages(dm.ID, 0), "Paused: daily token budget used up")) > 0
	})
	msgs := srv.Messages(dm.ID, 0)
	if n := len(containing(msgs, "ECHO: three")) + len(containing(msgs, "ECHO: four")); n != 0 {
		t.Fatalf("%d messages past the budget ran the same day", n)
	}
	notices := containing(msgs, "daily token budget is used up")
	if len(notices) != 1 || !strings.Contains(notices[0].Text, "2,100 tokens in 2 turns today, budget 2,000") {
		t.Errorf("budget notices = %+v, want one with the day's figures", notices)
	}
	status := containing(msgs, "Tokens today:")
	if len(status) != 1 || !strings.Contains(status[0].Text, "Tokens today: 2,100 in 2 turns (daily budget 2,000); this month: 2,100 in 2 turns") ||
		!strings.Contains(status[0].Text, "Of them yours: 2,100 in 2 turns today") {
		t.Errorf("/status = %+v, want the day's spend from the turns' usage, and the asker's own", status)
	}
	lanes, err := d.Store.Lanes(ctx, 10)
	if err != nil || len(lanes) != 1 {
		t.Fatalf("lanes = %+v, %v; want the DM's", lanes, err)
	}
	key, day := lanes[0].SessionKey, store.DayStart(clock.Now(), nil)
	want := store.UsageTotals{Turns: 2, Tokens: 2100, Input: 2000, CachedInput: 800, Output: 100}
	for _, sender := range []string{"", "1001"} {
		if got, err := d.Store.LaneUsage(ctx, key, sender, day, day.AddDate(0, 0, 1)); err != nil || got != want {
			t.Errorf("LaneUsage(sender %q) = %+v, %v; want the two turns' %+v", sender, got, err, want)
		}
	}

	clock.Advance(24 * time.Hour)
	armed := timers.armed()
	if len(armed) != 1 {
		t.Fatalf("%d usage timers armed, want the next day's", len(armed))
	}
	armed[0]()
	srv.WaitFor(60*time.Second, "the waiting messages' replies", func() bool { return replied("three")() && replied("four")() })
	msgs = srv.Messages(dm.ID, 0)
	if three, four := indexOf(msgs, containing(msgs, "ECHO: three")[0].ID), indexOf(msgs, containing(msgs, "ECHO: four")[0].ID); three > four {
		t.Errorf("the waiting messages ran out of order")
	}
	if n := len(containing(msgs, "daily token budget is used up")); n != 1 {
		t.Errorf("%d budget notices, want 1", n)
	}
}
