package usage

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/store"
)

// A lane's daily token budget (lanes.budget_tokens_per_day): before a
// lane's worker starts an item it sums the tokens the lane's turns spent
// today from the store (so the sum survives a restart and is the same on
// every node); at or past the budget the item is parked as in the
// usage-limit pause, the lane is told once that day with the figures, and
// its worker restarts when the next day begins. The turn that crosses the
// budget runs to its end: a turn's spend is known only once it ran.

// Budget is the daily token budget of every lane.
type Budget struct {
	PerDay int64          // tokens a lane's turns may spend a day; 0 = off
	Zone   *time.Location // where days begin: lanes.timezone, nil = UTC
}

// BudgetOf is the budget of lanes.budget_tokens_per_day with days that
// begin in the zone lanes.timezone names ("": UTC; config checked the
// name, so one that does not load is UTC too).
func BudgetOf(perDay int, zone string) Budget {
	b := Budget{PerDay: int64(perDay)}
	if zone != "" {
		if loc, err := time.LoadLocation(zone); err == nil {
			b.Zone = loc
		}
	}
	return b
}

// budgetState is the store's name for the lanes told of today's budget.
const budgetState = "usage_budget"

type savedBudget struct {
	Day  time.Time `json:"day"`
	Told []string  `json:"told,omitempty"`
}

// budgetGate is which lanes wait for the next day.
type budgetGate struct {
	saveMu  sync.Mutex // serialises saveBudget
	mu      sync.Mutex
	day     time.Time           // the start of the day told and waiting are of
	waiting map[string]ext.Lane // lanes whose worker parked, by key
	told    map[string]bool     // lanes told on day
	stop    func() bool         // the timer of the next day's start; nil when none is armed
}

func newBudgetGate() *budgetGate {
	return &budgetGate{waiting: map[string]ext.Lane{}, told: map[string]bool{}}
}

// WithBudget sets the lanes' daily token budget; it returns m.
func (m *Limits) WithBudget(b Budget) *Limits {
	m.budget = b
	return m
}

// dayOf is the start of the day holding at and of the next one.
func (b Budget) dayOf(at time.Time) (start, next time.Time) {
	start = store.DayStart(at, b.Zone)
	return start, start.AddDate(0, 0, 1)
}

// parkOverBudget is the worker's check before it starts an item: a lane
// whose turns spent its budget today waits for the next day. A failed read
// of the spend lets the item run (logged): a budget never loses a message.
func (m *Limits) parkOverBudget(l ext.Lane, park func(wait func() bool) bool) bool {
	if m.budget.PerDay <= 0 {
		return false
	}
	now := m.now()
	day, next := m.budget.dayOf(now)
	key := l.Key()
	spent, err := m.st.LaneUsage(m.host.Context(), key, "", day, next)
	if err != nil {
		m.log.Warn("usage.budget_unread", zap.String("lane", key), zap.Error(err))
		return false
	}
	if spent.Tokens < m.budget.PerDay {
		return false
	}
	var tell bool
	parked := park(func() bool {
		g := m.budgetGate
		g.mu.Lock()
		defer g.mu.Unlock()
		m.rollBudgetDay(day)
		g.waiting[key] = l
		tell = !g.told[key]
		g.told[key] = true
		if g.stop == nil {
			g.stop = m.gate.after(next.Sub(now), m.resumeAtNextDay)
		}
		return true
	})
	if !parked {
		return false
	}
	if tell {
		m.log.Warn("usage.budget_reached", zap.String("lane", key), zap.Int64("spent", spent.Tokens),
			zap.Int64("budget", m.budget.PerDay), zap.Time("until", next))
		m.saveBudget() // before the notice: a restart must not tell again
		m.host.Notify(m.host.Context(), l.Address(), "", m.budgetNotice(spent, next))
	}
	return true
}

// rollBudgetDay forgets the lanes told on an earlier day; g.mu is held.
func (m *Limits) rollBudgetDay(day time.Time) {
	g := m.budgetGate
	if !g.day.Equal(day) {
		g.day, g.told = day, map[string]bool{}
	}
}

// resumeAtNextDay runs when the next day's timer fires: the waiting lanes'
// workers restart, and each finds a new day's budget. A timer that fired
// early (the clock moved) re-arms.
func (m *Limits) resumeAtNextDay() {
	if m.host.Draining() {
		return // shut down: the inbox keeps the waiting messages for the next start
	}
	g := m.budgetGate
	g.mu.Lock()
	if left := g.day.AddDate(0, 0, 1).Sub(m.now()); left > 0 {
		g.stop = m.gate.after(left, m.resumeAtNextDay)
		g.mu.Unlock()
		return
	}
	waiting := g.waiting
	g.waiting, g.stop = map[string]ext.Lane{}, nil
	g.mu.Unlock()
	m.log.Info("usage.budget_resumed", zap.Int("lanes", len(waiting)))
	for _, l := range waiting {
		l.Resume()
	}
}

// budgetNotice tells a lane its budget is spent, with the figures, and
// when its messages run.
func (m *Limits) budgetNotice(spent store.UsageTotals, next time.Time) string {
	return fmt.Sprintf("This lane's daily token budget is used up: %s tokens in %s today, budget %s. "+
		"Your waiting messages run when the next day begins, %s.",
		groupDigits(spent.Tokens), turns(spent.Turns), groupDigits(m.budget.PerDay), next.Format("Mon 15:04 MST"))
}

// saveBudget records the lanes told today, so a restart during the day
// tells none of them again. A failed save is logged: it costs at most a
// repeated notice, never a message.
func (m *Limits) saveBudget() {
	g := m.budgetGate
	g.saveMu.Lock()
	defer g.saveMu.Unlock()
	g.mu.Lock()
	p := savedBudget{Day: g.day}
	for key := range g.told {
		p.Told = append(p.Told, key)
	}
	g.mu.Unlock()
	slices.Sort(p.Told)
	b, _ := json.Marshal(p)
	if err := m.st.SetState(m.host.Context(), budgetState, string(b)); err != nil {
		m.log.Warn("usage.budget_save_failed", zap.Error(err))
	}
}

// restoreBudget takes up the lanes told today before a restart; a record
// of an earlier day is ignored.
func (m *Limits) restoreBudget(ctx context.Context) {
	if m.budget.PerDay <= 0 {
		return
	}
	raw, err := m.st.State(ctx, budgetState)
	if err != nil || raw == "" {
		if err != nil {
			m.log.Warn("usage.budget_read_failed", zap.Error(err))
		}
		return
	}
	var p savedBudget
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		m.log.Warn("usage.budget_unreadable", zap.Error(err))
		return
	}
	day, _ := m.budget.dayOf(m.now())
	if !p.Day.Equal(day) {
		return
	}
	g := m.budgetGate
	g.mu.Lock()
	g.day = day
	for _, key := range p.Told {
		g.told[key] = true
	}
	g.mu.Unlock()
}

// budgetWaiting reports whether the lane key waits for the next day.
func (m *Limits) budgetWaiting(key string) bool {
	g := m.budgetGate
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.waiting[key]
	return ok
}

// spendLines are the /status lines of what the lane's turns spent today
// and this month (from the turns recorded in the store), its budget, and
// codex's own estimate for its thread where codex has one (a ChatGPT
// account's billing route).
func (m *Limits) spendLines(ctx context.Context, sl store.Lane, b *strings.Builder) {
	now := m.now()
	p, err := m.st.LaneUsagePeriods(ctx, sl.SessionKey, "", now, m.budget.Zone)
	if err != nil {
		m.log.Warn("status.spend_failed", zap.String("lane", sl.SessionKey), zap.Error(err))
		return
	}
	fmt.Fprintf(b, "Tokens today: %s in %s", groupDigits(p.Day.Tokens), turns(p.Day.Turns))
	if m.budget.PerDay > 0 {
		fmt.Fprintf(b, " (daily budget %s)", groupDigits(m.budget.PerDay))
	}
	fmt.Fprintf(b, "; this month: %s in %s\n", groupDigits(p.Month.Tokens), turns(p.Month.Turns))
	m.askerLine(ctx, sl.SessionKey, now, b)
	if m.budgetWaiting(sl.SessionKey) {
		_, next := m.budget.dayOf(now)
		b.WriteString("Paused: daily token budget used up; continuing " + next.Format("Mon 15:04 MST") + "\n")
	}
	if sl.ThreadID == "" {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	cost, ok, err := m.cx.ThreadUsage(rctx, sl.ThreadID)
	cancel()
	if err != nil || !ok {
		// An API-key provider has no billing route: expected, not news.
		m.log.Debug("status.thread_usage_unread", zap.Error(err))
		return
	}
	b.WriteString("Codex estimate for this thread: " + costText(cost.CreditMicros, cost.USDMicros) + "\n")
}

// costText is codex's estimate: credits, and dollars when it knows them.
func costText(creditMicros, usdMicros int64) string {
	s := fmt.Sprintf("%.2f credits", float64(creditMicros)/1e6)
	if usdMicros >= 0 {
		s += fmt.Sprintf(" (US$%.2f)", float64(usdMicros)/1e6)
	}
	return s
}

// groupDigits writes n with thousands separated by commas.
func groupDigits(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// askerLine is the /status line of what the asker's own messages spent in
// the lane, in a lane where others talk too (a DM's would repeat the line
// above).
func (m *Limits) askerLine(ctx context.Context, key string, now time.Time, b *strings.Builder) {
	asker := ext.StatusAsker(ctx)
	if asker == "" {
		return
	}
	p, err := m.st.LaneUsagePeriods(ctx, key, asker, now, m.budget.Zone)
	if err != nil {
		m.log.Warn("status.spend_failed", zap.String("lane", key), zap.Error(err))
		return
	}
	fmt.Fprintf(b, "Of them yours: %s in %s today; %s in %s this month\n",
		groupDigits(p.Day.Tokens), turns(p.Day.Turns), groupDigits(p.Month.Tokens), turns(p.Month.Turns))
}

// turns words a count of turns.
func turns(n int64) string {
	if n == 1 {
		return "1 turn"
	}
	return fmt.Sprintf("%d turns", n)
}
