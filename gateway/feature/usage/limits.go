// Package usage is Codex's usage as the gateway shows and obeys it: the
// lane's context and last turn and the account's limits in /status, the
// tokens turns spend, and the pause while the usage limit is reached.
package usage

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// When Codex reports its usage limit reached, every lane's new turns wait
// until the limit resets instead of failing one by one:
//
//   - the turn that hit the limit is not committed: its inbound row stays
//     received and its journal entry is cleared, so the message goes back
//     to the head of its lane's queue and runs after the reset (a restart
//     during the pause reruns it from the inbox). codex keeps the failed
//     attempt in the thread's history; the rerun is the same text again.
//   - a lane worker that is about to start an item while paused puts it
//     back and retires; the inbox rows stay received, so nothing is lost;
//   - each lane with waiting work is told once per pause, through the
//     durable outbox;
//   - at the reset time (or on /retry) the waiting lanes' workers restart.

// LimitFallback is the pause when codex reported no rate-limit window
// saying when the limit resets (its error message names only a clock time).
const LimitFallback = 15 * time.Minute

// Limits is the usage-limit pause and the /status lines of usage: it owns
// the gateway-wide gate, keeps it in the store across a restart
// (pausestate.go), parks the lanes' workers while it is closed, requeues a
// turn that failed on the limit, lifts the pause on /retry, and counts
// tokens (usage.go).
type Limits struct {
	gate       *gate
	budgetGate *budgetGate
	budget     Budget
	st         Store
	cx         Runtime
	host       ext.Host
	log        *zap.Logger
	obs        ext.Metrics
}

// Store is the part of the store usage limits use: the saved pause and
// the usage recorded with a lane's turns (its last, and sums by time).
type Store interface {
	SetState(ctx context.Context, name, value string) error
	State(ctx context.Context, name string) (string, error)
	LastTurnUsage(ctx context.Context, sessionKey string) (store.TurnUsage, bool, error)
	LaneUsage(ctx context.Context, sessionKey, sender string, from, to time.Time) (store.UsageTotals, error)
	LaneUsagePeriods(ctx context.Context, sessionKey, sender string, at time.Time, loc *time.Location) (store.UsagePeriods, error)
}

// Runtime is the part of codex usage limits read: the account's
// rate-limit windows, read afresh (account/rateLimits/read; only a
// ChatGPT account has them) or the last that codex reported, and a loaded
// thread's usage and codex's estimate of what a thread cost (only with a
// ChatGPT account).
type Runtime interface {
	RateLimits(ctx context.Context) (codex.RateLimits, error)
	LastRateLimits() (codex.RateLimits, bool)
	Usage(threadID string) (codex.Usage, bool)
	ThreadUsage(ctx context.Context, threadID string) (codex.ThreadCost, bool, error)
}

var (
	_ Store   = (*store.Store)(nil)
	_ Runtime = (*codex.Client)(nil)
)

// AfterFunc schedules f after d and returns what stops it
// (time.AfterFunc's Stop).
type AfterFunc func(d time.Duration, f func()) (stop func() bool)

// New is the usage feature over st and cx. after arms the resume timer of
// a pause; nil is time.AfterFunc (tests fire it by hand).
func New(st Store, cx Runtime, after AfterFunc) *Limits {
	if after == nil {
		after = func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }
	}
	return &Limits{gate: newGate(after), budgetGate: newBudgetGate(), st: st, cx: cx}
}

// Name is the feature's name.
func (m *Limits) Name() string { return "usage" }

// Register adds the lane's context, last turn, spend today and this month
// and the account's limits to /status, takes over a turn that failed on
// the usage limit, holds the lanes' work while paused and a lane's past its
// daily budget, lifts the pause on /retry, counts tokens and takes up a
// pause saved before a restart.
func (m *Limits) Register(h ext.Host) error {
	m.host, m.log, m.obs = h, h.Logger(), h.Metrics()
	h.OnStatus(m.statusLines)
	h.OnResult(m.usageLimited)
	h.OnHold(m.parkIfPaused)
	h.OnHold(m.parkOverBudget)
	h.OnHolding(m.usagePaused)
	h.OnRetry(m.retryAfterLimit)
	h.OnUsage(m.countTokens)
	h.OnStart(m.restoreUsagePause) // before recovery queues the waiting messages
	h.OnStart(m.restoreBudget)
	return nil
}

func (m *Limits) now() time.Time { return m.host.Now() }

// gate is the gateway-wide "paused until" state.
type gate struct {
	saveMu  sync.Mutex // serialises saveUsagePause (pausestate.go)
	mu      sync.Mutex
	until   time.Time           // zero: not paused
	lifted  time.Time           // /retry lifted a pause until this: windows resetting by then are ignored
	waiting map[string]ext.Lane // lanes whose worker parked, by key
	told    map[string]bool     // lanes told during this pause
	stop    func() bool         // the resume timer of the current pause
	after   AfterFunc
}

func newGate(after AfterFunc) *gate {
	return &gate{waiting: map[string]ext.Lane{}, told: map[string]bool{}, after: after}
}

// pausedUntil reports the pause in force at now.
func (u *gate) pausedUntil(now time.Time) (time.Time, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.until, !u.until.IsZero() && now.Before(u.until)
}

// Parked reports whether the worker of the lane key is parked until the
// pause ends.
func (m *Limits) Parked(key string) bool {
	m.gate.mu.Lock()
	defer m.gate.mu.Unlock()
	_, ok := m.gate.waiting[key]
	return ok
}

// PausedUntil reports the pause in force now.
func (m *Limits) PausedUntil() (time.Time, bool) { return m.gate.pausedUntil(m.now()) }

// pauseForUsage pauses new turns until until (a later pause extends it) and
// arms the resume timer.
func (m *Limits) pauseForUsage(until time.Time) {
	u := m.gate
	u.mu.Lock()
	if !until.After(u.until) {
		u.mu.Unlock()
		return
	}
	if u.until.IsZero() {
		m.log.Warn("usage.limit_reached", zap.Time("until", until))
	} else {
		m.log.Warn("usage.limit_extended", zap.Time("until", until))
	}
	u.until = until
	if u.stop != nil {
		u.stop()
	}
	u.stop = u.after(until.Sub(m.now()), m.resumeAtReset)
	u.mu.Unlock()
	m.saveUsagePause()
}

// resumeAtReset runs when the pause's timer fires; a pause extended since
// then re-arms instead.
func (m *Limits) resumeAtReset() {
	if m.host.Draining() {
		return // shut down: the inbox keeps the waiting messages for the next start
	}
	u := m.gate
	u.mu.Lock()
	if left := u.until.Sub(m.now()); left > 0 {
		u.stop = u.after(left, m.resumeAtReset)
		u.mu.Unlock()
		return
	}
	u.mu.Unlock()
	m.resumeLanes("reset")
}

// resumeLanes ends the pause and restarts the parked lanes' workers; it
// reports whether a pause was in force.
func (m *Limits) resumeLanes(why string) bool {
	u := m.gate
	u.mu.Lock()
	was := !u.until.IsZero()
	if was && why == "retry" {
		u.lifted = u.until
	}
	u.until = time.Time{}
	if u.stop != nil {
		u.stop()
		u.stop = nil
	}
	parked := u.waiting
	u.waiting, u.told = map[string]ext.Lane{}, map[string]bool{}
	u.mu.Unlock()
	if was {
		m.log.Info("usage.resumed", zap.String("by", why), zap.Int("lanes", len(parked)))
		m.saveUsagePause()
	}
	for _, l := range parked {
		l.Resume()
	}
	return was
}

// windowsReached pauses the gateway when codex's last rate-limit windows
// say the limit is used up, before a turn is even tried.
func (m *Limits) windowsReached() {
	snap, ok := m.cx.LastRateLimits()
	if !ok {
		return
	}
	until, reached := snap.ReachedUntil(m.now())
	m.gate.mu.Lock()
	ignored := !until.After(m.gate.lifted)
	m.gate.mu.Unlock()
	if reached && !ignored {
		m.pauseForUsage(until)
	}
}

// usagePaused says whether new turns wait for a usage limit to reset.
func (m *Limits) usagePaused() bool {
	_, paused := m.gate.pausedUntil(m.now())
	return paused
}

// parkIfPaused is the worker's check before it starts an item: while
// paused the item goes back to the head of the lane's queue and the worker
// retires (resumeLanes restarts it). It reports whether the item was
// parked. The lane is told once per pause; that notice also stands for
// the "queued" notice of the burst.
func (m *Limits) parkIfPaused(l ext.Lane, park func(wait func() bool) bool) bool {
	m.windowsReached()
	now := m.now()
	key := l.Key()
	var until time.Time
	var tell bool
	// Decided under the lane's lock (park holds it): resumeLanes, which
	// restarts a parked lane under the same lock, cannot run between the
	// lane joining the waiting ones and its worker retiring.
	paused := park(func() bool {
		u := m.gate
		u.mu.Lock()
		defer u.mu.Unlock()
		var paused bool
		until, paused = u.until, !u.until.IsZero() && now.Before(u.until)
		tell = paused && !u.told[key]
		if paused {
			u.waiting[key] = l
			u.told[key] = true
		}
		return paused
	})
	if tell {
		m.saveUsagePause() // before the notice: a restart must not tell again
		m.host.Notify(m.host.Context(), l.Address(), "", m.usageLimitNotice(until))
	}
	return paused
}

// usageLimited handles a turn that failed on the usage limit: it pauses
// the gateway, puts the message back at the head of its lane's queue
// (uncommitted, so it stays received in the inbox) and tells the lane,
// once, when it continues. It reports whether it handled the turn.
func (m *Limits) usageLimited(ctx context.Context, t ext.Turn, res codex.TurnResult, err error) bool {
	if err != nil || res.Status != codex.TurnFailed || !res.Error.IsUsageLimit() {
		return false
	}
	l := t.Lane()
	until := m.usageResetTime()
	m.pauseForUsage(until)
	m.log.Warn("turn.usage_limited", zap.String("lane", l.Key()), zap.String("thread", t.Thread()),
		zap.String("turn", res.TurnID), zap.Time("until", until))
	m.obs.TurnFinished("usage_limited", m.now().Sub(t.Started()))
	// The worker running it parks them at its next step (the gate is
	// paused).
	t.Requeue(ctx)
	u := m.gate
	u.mu.Lock()
	tell := !u.told[l.Key()]
	u.told[l.Key()] = true
	u.mu.Unlock()
	if tell {
		m.saveUsagePause()
		// A lane notice, not an answer to the message: the message's answer
		// is the reply that comes after the reset (the API lane ends a
		// request at the first answer to it).
		m.host.Notify(ctx, l.Address(), "", m.usageLimitNotice(until))
	}
	return true
}

// usageResetTime is when the reached limit resets: the latest reset of
// the used-up windows codex reported, else a fixed wait.
func (m *Limits) usageResetTime() time.Time {
	now := m.now()
	if snap, ok := m.cx.LastRateLimits(); ok {
		if until, reached := snap.ReachedUntil(now); reached {
			return until
		}
	}
	return now.Add(LimitFallback)
}

// usageLimitNotice tells a lane when work continues, in the daemon's local
// time with its zone (and the weekday when that is not within a day).
func (m *Limits) usageLimitNotice(until time.Time) string {
	return fmt.Sprintf("Codex usage limit reached; I'll continue at %s. Your waiting messages run then (send /retry to try sooner).",
		ClockTime(until, m.now()))
}

// ClockTime is at as a lane is told it: the daemon's local clock time and
// zone, with the weekday when at is more than 20 hours after now.
func ClockTime(at, now time.Time) string {
	at = at.In(time.Local)
	if at.Sub(now) > 20*time.Hour {
		return at.Format("Mon 15:04 MST")
	}
	return at.Format("15:04 MST")
}

// retryAfterLimit is /retry during a pause: it lifts the pause and reports
// true when this lane's own waiting work now runs (nothing else to retry).
func (m *Limits) retryAfterLimit(ctx context.Context, c ext.Call) bool {
	m.gate.mu.Lock()
	_, parked := m.gate.waiting[c.Lane.Key()]
	m.gate.mu.Unlock()
	if !m.resumeLanes("retry") {
		return false
	}
	if !parked && !c.Lane.HasWork() {
		return false // nothing of this lane waited: retry its turn to retry as usual
	}
	m.host.Notify(ctx, c.Lane.Address(), c.MsgID, "Trying Codex again now; your waiting messages run in order.")
	return true
}

// usagePauseStatus is the /status line of a pause in force ("" if none).
func (m *Limits) usagePauseStatus() string {
	until, paused := m.gate.pausedUntil(m.now())
	if !paused {
		return ""
	}
	return "Paused: Codex usage limit reached; continuing at " + ClockTime(until, m.now()) + "\n"
}
