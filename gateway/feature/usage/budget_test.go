package usage

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// budgetHost is a host whose clock the test moves, with the usage feature
// registered under a budget of perDay tokens a day in zone.
func budgetHost(t *testing.T, perDay int64, zone *time.Location, st *fakeStore, tm *timers) (*exttest.Host, *Limits, *time.Time) {
	t.Helper()
	h := exttest.NewHost(t)
	now := time.Date(2031, 3, 14, 15, 0, 0, 0, time.UTC)
	h.Clock = func() time.Time { return now }
	m := New(st, &fakeCodex{}, tm.after).WithBudget(Budget{PerDay: perDay, Zone: zone})
	h.Register(t, m)
	return h, m, &now
}

// hold runs the hold hooks for l as its worker does and reports whether
// the item was parked (the core parks when wait says so).
func hold(h *exttest.Host, l *exttest.Lane) bool {
	return h.Hold(l, func(wait func() bool) bool { return wait() })
}

// A lane runs while its turns spent less than its budget today; past it,
// its work parks and it is told once with the figures, other lanes run on,
// and at the next day's start (the fake clock moved, the timer fired) the
// lane's worker restarts and its work runs.
func TestBudgetParksLaneOnceAndResumesNextDay(t *testing.T) {
	st, tm := newFakeStore(), &timers{}
	h, m, now := budgetHost(t, 1000, nil, st, tm)
	l := &exttest.Lane{Addr: chat.Address{Platform: "api", ChatID: "a"}}
	other := &exttest.Lane{Addr: chat.Address{Platform: "api", ChatID: "b"}}
	st.spend(l.Key(), "ann", now.Add(-24*time.Hour), 5000) // yesterday's: not today's budget
	st.spend(l.Key(), "ann", now.Add(-time.Hour), 600)
	if hold(h, l) {
		t.Fatal("a lane under its budget was parked")
	}
	st.spend(l.Key(), "bob", now.Add(-time.Minute), 500)
	st.spend(other.Key(), "ann", now.Add(-time.Minute), 999)
	if !hold(h, l) {
		t.Fatal("a lane past its budget was not parked")
	}
	if !hold(h, l) {
		t.Fatal("the lane's next item was not parked")
	}
	if hold(h, other) {
		t.Error("a lane under its budget was parked beside one past it")
	}
	n := h.Notices()
	if len(n) != 1 || n[0].Addr != l.Addr {
		t.Fatalf("notices %+v, want one to the lane past its budget", n)
	}
	want := "This lane's daily token budget is used up: 1,100 tokens in 2 turns today, budget 1,000. " +
		"Your waiting messages run when the next day begins, Sat 00:00 UTC."
	if n[0].Text != want {
		t.Errorf("notice %q, want %q", n[0].Text, want)
	}
	if len(tm.delays) != 1 || tm.delays[0] != 9*time.Hour {
		t.Fatalf("timers %v, want one to the next day's start (9h)", tm.delays)
	}
	if !strings.Contains(st.state[budgetState], l.Key()) {
		t.Errorf("saved budget state %q does not name the told lane", st.state[budgetState])
	}
	status := h.Status(ext.WithStatusAsker(context.Background(), "bob"), store.Lane{SessionKey: l.Key()})
	for _, line := range []string{
		"Tokens today: 1,100 in 2 turns (daily budget 1,000); this month: 6,100 in 3 turns\n",
		"Of them yours: 500 in 1 turn today; 500 in 1 turn this month\n", // bob's own
		"Paused: daily token budget used up; continuing Sat 00:00 UTC\n",
	} {
		if !strings.Contains(status, line) {
			t.Errorf("/status:\n%s\nwant %q", status, line)
		}
	}

	tm.fns[0]() // early (the clock did not move): re-armed, nobody resumed
	if l.Resumed() != 0 || len(tm.delays) != 2 || tm.delays[1] != 9*time.Hour {
		t.Fatalf("early timer: resumed %d, timers %v", l.Resumed(), tm.delays)
	}
	*now = time.Date(2031, 3, 15, 0, 0, 1, 0, time.UTC)
	tm.fns[1]()
	if l.Resumed() != 1 || m.budgetWaiting(l.Key()) {
		t.Fatalf("next day: resumed %d, still waiting %v", l.Resumed(), m.budgetWaiting(l.Key()))
	}
	if hold(h, l) {
		t.Error("the lane was parked again on the next day, with nothing spent")
	}
	if len(h.Notices()) != 1 {
		t.Errorf("notices %+v, want still one", h.Notices())
	}
	// Past the budget again the next day: told again, that day.
	st.spend(l.Key(), "ann", *now, 1000)
	if !hold(h, l) || len(h.Notices()) != 2 {
		t.Errorf("the next day's budget: notices %+v", h.Notices())
	}
}

// The lanes told today are kept in the store: after a restart a lane still
// past its budget waits without being told again; a record of an earlier
// day is ignored, so the lane is told that new day.
func TestBudgetToldOnceAcrossRestart(t *testing.T) {
	for _, tc := range []struct {
		name  string
		day   string
		tells int
	}{
		{"same day", "2031-03-14T00:00:00Z", 0},
		{"earlier day", "2031-03-13T00:00:00Z", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, tm := newFakeStore(), &timers{}
			l := &exttest.Lane{Addr: chat.Address{Platform: "api", ChatID: "a"}}
			st.state[budgetState] = `{"day":"` + tc.day + `","told":["` + l.Key() + `"]}`
			h, _, now := budgetHost(t, 1000, nil, st, tm)
			h.Start(context.Background())
			st.spend(l.Key(), "ann", now.Add(-time.Hour), 1500)
			if !hold(h, l) {
				t.Fatal("a lane past its budget was not parked after the restart")
			}
			if n := h.Notices(); len(n) != tc.tells {
				t.Errorf("notices %+v, want %d", n, tc.tells)
			}
		})
	}
}

// Without a budget nothing is read and nothing parks.
func TestBudgetOff(t *testing.T) {
	st, tm := newFakeStore(), &timers{}
	h, _, now := budgetHost(t, 0, nil, st, tm)
	l := &exttest.Lane{Addr: chat.Address{Platform: "api", ChatID: "a"}}
	st.spend(l.Key(), "ann", *now, 1<<40)
	if hold(h, l) || st.reads != 0 || len(tm.delays) != 0 {
		t.Errorf("budget off: parked or read the store (%d reads) or armed timers %v", st.reads, tm.delays)
	}
}

// Days begin in the budget's zone (lanes.timezone): 23:30 UTC is already
// the next day in Berlin, so yesterday's spend (in UTC) no longer counts
// there, and the wait ends at Berlin's midnight.
func TestBudgetDayInZone(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	st, tm := newFakeStore(), &timers{}
	h, _, now := budgetHost(t, 1000, berlin, st, tm)
	*now = time.Date(2031, 3, 14, 23, 30, 0, 0, time.UTC) // 00:30 on the 15th in Berlin
	l := &exttest.Lane{Addr: chat.Address{Platform: "api", ChatID: "a"}}
	st.spend(l.Key(), "ann", now.Add(-time.Hour), 5000) // 23:30 on the 14th in Berlin
	if hold(h, l) {
		t.Fatal("the Berlin day before's spend parked the lane")
	}
	st.spend(l.Key(), "ann", *now, 1000)
	if !hold(h, l) || len(tm.delays) != 1 || tm.delays[0] != 23*time.Hour+30*time.Minute {
		t.Fatalf("timers %v, want one to Berlin's next midnight (23h30m)", tm.delays)
	}
	if n := h.Notices(); len(n) != 1 || !strings.HasSuffix(n[0].Text, "Sun 00:00 CET.") {
		t.Errorf("notices %+v, want the next day named in Berlin's time", n)
	}
}

// /status names codex's estimate of the thread's cost where codex has one.
func TestStatusThreadCostFromCodex(t *testing.T) {
	h := exttest.NewHost(t)
	cx := &fakeCodex{hasCost: true, cost: codex.ThreadCost{CreditMicros: 2_500_000, USDMicros: 120_000}}
	h.Register(t, New(newFakeStore(), cx, nil))
	status := h.Status(context.Background(), store.Lane{SessionKey: "k", ThreadID: "t1"})
	if !strings.Contains(status, "Codex estimate for this thread: 2.50 credits (US$0.12)\n") {
		t.Errorf("/status:\n%s\nwant codex's estimate", status)
	}
	if !strings.Contains(status, "Tokens today: 0 in 0 turns; this month: 0 in 0 turns\n") {
		t.Errorf("/status:\n%s\nwant the day's and month's spend without a budget", status)
	}
	if costText(1_000_000, -1) != "1.00 credits" {
		t.Errorf("costText without dollars = %q", costText(1_000_000, -1))
	}
}

func TestGroupDigits(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -1500: "-1,500"} {
		if got := groupDigits(n); got != want {
			t.Errorf("groupDigits(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestBudgetOf(t *testing.T) {
	if b := BudgetOf(5000, ""); b.PerDay != 5000 || b.Zone != nil {
		t.Errorf("BudgetOf(5000, \"\") = %+v, want UTC days", b)
	}
	if b := BudgetOf(1, "Europe/Berlin"); b.Zone == nil || b.Zone.String() != "Europe/Berlin" {
		t.Errorf("BudgetOf with a zone = %+v, want Europe/Berlin", b)
	}
}
