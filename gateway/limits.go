package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

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

// usageLimitFallback is the pause when codex reported no rate-limit window
// saying when the limit resets (its error message names only a clock time).
const usageLimitFallback = 15 * time.Minute

// usageLimits is the usage-limit pause and the /status lines of usage: it
// owns the gateway-wide gate, keeps it in the store across a restart
// (pausestate.go), parks the lanes' workers while it is closed, requeues a
// turn that failed on the limit, lifts the pause on /retry, and counts
// tokens (usage.go).
type usageLimits struct {
	gate    *usageGate
	st      usageLimitStore
	cx      usageRuntime
	sched   parkingLot // the lanes' workers, parked and resumed; set by New once it exists
	out     *deliverer
	inbox   inbox
	journal journal
	base    context.Context // the gateway's: saves and lane notices outlive a turn
	log     *zap.Logger
	obs     Observer
	now     func() time.Time
}

// usageLimitStore is the part of the store usage limits use: the saved
// pause and the usage recorded with a lane's last turn.
type usageLimitStore interface {
	stateStore
	usageStore
}

// usageRuntime is the part of codex usage limits read: the account's
// rate-limit windows and a loaded thread's usage.
type usageRuntime interface {
	limitRuntime
	Usage(threadID string) (codex.Usage, bool)
}

var (
	_ usageLimitStore = (*store.Store)(nil)
	_ usageRuntime    = (*codex.Client)(nil)
)

// parkingLot is what the pause asks of the scheduler (scheduler.go): park
// a worker's next item and retire the worker, put items back at the head
// of a lane's queue, restart a parked lane's worker, and whether the
// gateway is shutting down.
type parkingLot interface {
	park(l *lane, it item, wait func() bool) bool
	requeue(l *lane, items []item)
	resume(l *lane)
	draining() bool
}

func newUsageLimits(st usageLimitStore, cx usageRuntime, out *deliverer, in inbox, j journal,
	base context.Context, log *zap.Logger, obs Observer, now func() time.Time) *usageLimits {
	return &usageLimits{gate: newUsageGate(), st: st, cx: cx, out: out, inbox: in, journal: j,
		base: base, log: log, obs: obs, now: now}
}

// usageGate is the gateway-wide "paused until" state.
type usageGate struct {
	saveMu  sync.Mutex // serialises saveUsagePause (pausestate.go)
	mu      sync.Mutex
	until   time.Time        // zero: not paused
	lifted  time.Time        // /retry lifted a pause until this: windows resetting by then are ignored
	waiting map[string]*lane // lanes whose worker parked, by key
	told    map[string]bool  // lanes told during this pause
	stop    func() bool      // the resume timer of the current pause
	// after schedules f after d (time.AfterFunc; tests fire it by hand).
	after func(d time.Duration, f func()) (stop func() bool)
}

func newUsageGate() *usageGate {
	return &usageGate{waiting: map[string]*lane{}, told: map[string]bool{},
		after: func(d time.Duration, f func()) func() bool { return time.AfterFunc(d, f).Stop }}
}

// pausedUntil reports the pause in force at now.
func (u *usageGate) pausedUntil(now time.Time) (time.Time, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.until, !u.until.IsZero() && now.Before(u.until)
}

// pauseForUsage pauses new turns until until (a later pause extends it) and
// arms the resume timer.
func (m *usageLimits) pauseForUsage(until time.Time) {
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
func (m *usageLimits) resumeAtReset() {
	if m.sched.draining() {
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
func (m *usageLimits) resumeLanes(why string) bool {
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
	u.waiting, u.told = map[string]*lane{}, map[string]bool{}
	u.mu.Unlock()
	if was {
		m.log.Info("usage.resumed", zap.String("by", why), zap.Int("lanes", len(parked)))
		m.saveUsagePause()
	}
	for _, l := range parked {
		m.sched.resume(l)
	}
	return was
}

// windowsReached pauses the gateway when codex's last rate-limit windows
// say the limit is used up, before a turn is even tried.
func (m *usageLimits) windowsReached() {
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
func (m *usageLimits) usagePaused() bool {
	_, paused := m.gate.pausedUntil(m.now())
	return paused
}

// parkIfPaused is the worker's check before it starts it: while paused the
// item goes back to the head of the lane's queue and the worker retires
// (resumeLanes restarts it). It reports whether the item was parked. The
// lane is told once per pause; that notice also stands for the "queued"
// notice of the burst.
func (m *usageLimits) parkIfPaused(l *lane, it item) bool {
	m.windowsReached()
	now := m.now()
	var until time.Time
	var tell bool
	// Decided under the lane's lock (park holds it): resumeLanes, which
	// restarts a parked lane under the same lock, cannot run between the
	// lane joining the waiting ones and its worker retiring.
	paused := m.sched.park(l, it, func() bool {
		u := m.gate
		u.mu.Lock()
		defer u.mu.Unlock()
		var paused bool
		until, paused = u.until, !u.until.IsZero() && now.Before(u.until)
		tell = paused && !u.told[l.key]
		if paused {
			u.waiting[l.key] = l
			u.told[l.key] = true
		}
		return paused
	})
	if tell {
		m.saveUsagePause() // before the notice: a restart must not tell again
		m.out.Notify(m.base, l.addr, "", m.usageLimitNotice(until))
	}
	return paused
}

// usageLimited handles a turn that failed on the usage limit: it pauses
// the gateway, puts the message back at the head of its lane's queue
// (uncommitted, so it stays received in the inbox) and tells the lane,
// once, when it continues. It reports whether it handled the turn.
func (m *usageLimits) usageLimited(ctx context.Context, t *turn, res codex.TurnResult, err error) bool {
	if err != nil || res.Status != codex.TurnFailed || !res.Error.IsUsageLimit() {
		return false
	}
	t.stopStream()
	until := m.usageResetTime()
	m.pauseForUsage(until)
	m.log.Warn("turn.usage_limited", zap.String("lane", t.l.key), zap.String("thread", t.thread),
		zap.String("turn", res.TurnID), zap.Time("until", until))
	m.obs.TurnFinished("usage_limited", m.now().Sub(t.started))
	m.journal.clear(ctx, t.l.key)
	m.requeueForReset(t.l, t.it)
	u := m.gate
	u.mu.Lock()
	tell := !u.told[t.l.key]
	u.told[t.l.key] = true
	u.mu.Unlock()
	if tell {
		m.saveUsagePause()
		// A lane notice, not an answer to the message: the message's answer
		// is the reply that comes after the reset (the API lane ends a
		// request at the first answer to it).
		m.out.Notify(ctx, t.l.addr, "", m.usageLimitNotice(until))
	}
	return true
}

// requeueForReset puts the item back at the head of the lane's queue,
// followed by the messages steered into the refused turn (uncommitted too,
// so each runs as its own turn); the worker running it parks them at its
// next step (the gate is paused).
func (m *usageLimits) requeueForReset(l *lane, it item) {
	cur := l.current()
	items := []item{it}
	if cur != nil {
		steered := cur.steer.close()
		for i, s := range steered {
			id, name := cur.steer.sender(i)
			items = append(items, item{kind: itemTurn, inboundID: s.InboundID, msgID: s.MessageID, text: s.Text,
				requester: id, requesterName: name})
		}
	}
	m.sched.requeue(l, items)
}

// usageResetTime is when the reached limit resets: the latest reset of
// the used-up windows codex reported, else a fixed wait.
func (m *usageLimits) usageResetTime() time.Time {
	now := m.now()
	if snap, ok := m.cx.LastRateLimits(); ok {
		if until, reached := snap.ReachedUntil(now); reached {
			return until
		}
	}
	return now.Add(usageLimitFallback)
}

// usageLimitNotice tells a lane when work continues, in the daemon's local
// time with its zone (and the weekday when that is not within a day).
func (m *usageLimits) usageLimitNotice(until time.Time) string {
	return fmt.Sprintf("Codex usage limit reached; I'll continue at %s. Your waiting messages run then (send /retry to try sooner).",
		clockTime(until, m.now()))
}

func clockTime(at, now time.Time) string {
	at = at.In(time.Local)
	if at.Sub(now) > 20*time.Hour {
		return at.Format("Mon 15:04 MST")
	}
	return at.Format("15:04 MST")
}

// retryAfterLimit is /retry during a pause: it lifts the pause and reports
// true when this lane's own waiting work now runs (nothing else to retry).
func (m *usageLimits) retryAfterLimit(ctx context.Context, l *lane, inboundID int64, msgID string) bool {
	m.gate.mu.Lock()
	_, parked := m.gate.waiting[l.key]
	m.gate.mu.Unlock()
	if !m.resumeLanes("retry") {
		return false
	}
	waiting := l.snapshot().hasWork()
	if !parked && !waiting {
		return false // nothing of this lane waited: retry its turn to retry as usual
	}
	m.out.Notify(ctx, l.addr, msgID, "Trying Codex again now; your waiting messages run in order.")
	m.inbox.set(ctx, inboundID, store.InboundDone)
	return true
}

// usagePauseStatus is the /status line of a pause in force ("" if none).
func (m *usageLimits) usagePauseStatus() string {
	until, paused := m.gate.pausedUntil(m.now())
	if !paused {
		return ""
	}
	return "Paused: Codex usage limit reached; continuing at " + clockTime(until, m.now()) + "\n"
}

// register adds the lane's context, last turn and the account's limits to
// /status, and takes over a turn that failed on the usage limit.
func (m *usageLimits) register(h *host) {
	h.hooks.status = append(h.hooks.status, m.statusLines)
	h.hooks.result = append(h.hooks.result, m.usageLimited)
}
