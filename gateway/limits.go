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
func (g *Gateway) pauseForUsage(until time.Time) {
	u := g.usage
	u.mu.Lock()
	if !until.After(u.until) {
		u.mu.Unlock()
		return
	}
	if u.until.IsZero() {
		g.log.Warn("usage.limit_reached", zap.Time("until", until))
	} else {
		g.log.Warn("usage.limit_extended", zap.Time("until", until))
	}
	u.until = until
	if u.stop != nil {
		u.stop()
	}
	u.stop = u.after(until.Sub(g.now()), g.resumeAtReset)
	u.mu.Unlock()
	g.saveUsagePause()
}

// resumeAtReset runs when the pause's timer fires; a pause extended since
// then re-arms instead.
func (g *Gateway) resumeAtReset() {
	if g.sched.stopping.Load() {
		return // shut down: the inbox keeps the waiting messages for the next start
	}
	u := g.usage
	u.mu.Lock()
	if left := u.until.Sub(g.now()); left > 0 {
		u.stop = u.after(left, g.resumeAtReset)
		u.mu.Unlock()
		return
	}
	u.mu.Unlock()
	g.resumeLanes("reset")
}

// resumeLanes ends the pause and restarts the parked lanes' workers; it
// reports whether a pause was in force.
func (g *Gateway) resumeLanes(why string) bool {
	u := g.usage
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
		g.log.Info("usage.resumed", zap.String("by", why), zap.Int("lanes", len(parked)))
		g.saveUsagePause()
	}
	for _, l := range parked {
		l.mu.Lock()
		if !l.dead && !l.worker && l.queue.len() > 0 {
			g.sched.startWorker(l)
		}
		l.mu.Unlock()
	}
	return was
}

// windowsReached pauses the gateway when codex's last rate-limit windows
// say the limit is used up, before a turn is even tried.
func (g *Gateway) windowsReached() {
	snap, ok := g.cx.LastRateLimits()
	if !ok {
		return
	}
	until, reached := snap.ReachedUntil(g.now())
	g.usage.mu.Lock()
	ignored := !until.After(g.usage.lifted)
	g.usage.mu.Unlock()
	if reached && !ignored {
		g.pauseForUsage(until)
	}
}

// parkIfPaused is the worker's check before it starts it: while paused the
// item goes back to the head of the lane's queue and the worker retires
// (resumeLanes restarts it). It reports whether the item was parked. The
// lane is told once per pause; that notice also stands for the "queued"
// notice of the burst.
// usagePaused says whether new turns wait for a usage limit to reset.
func (g *Gateway) usagePaused() bool {
	now := g.now()
	u := g.usage
	u.mu.Lock()
	defer u.mu.Unlock()
	return !u.until.IsZero() && now.Before(u.until)
}

func (g *Gateway) parkIfPaused(l *lane, it item) bool {
	g.windowsReached()
	now := g.now()
	l.mu.Lock()
	u := g.usage
	u.mu.Lock()
	until, paused := u.until, !u.until.IsZero() && now.Before(u.until)
	tell := paused && !u.told[l.key]
	if paused {
		u.waiting[l.key] = l
		u.told[l.key] = true
	}
	u.mu.Unlock()
	dropJournal := paused && it.journal != nil
	if paused {
		// A parked message waits, maybe for hours: it is journaled when it
		// starts, so a restart meanwhile runs it instead of telling it cut
		// off.
		it.journal = nil
		l.queue.prepend([]item{it})
		g.sched.queued.Add(1)
		l.cur = nil
		l.worker = false
		l.notified = true
		g.sched.active.Add(-1)
	}
	l.mu.Unlock()
	if dropJournal {
		g.journal.clear(g.baseCtx, l.key)
	}
	if tell {
		g.saveUsagePause() // before the notice: a restart must not tell again
		g.out.notify(g.baseCtx, l.addr, "", g.usageLimitNotice(until))
	}
	return paused
}

// usageLimited handles a turn that failed on the usage limit: it pauses
// the gateway, puts the message back at the head of its lane's queue
// (uncommitted, so it stays received in the inbox) and tells the lane,
// once, when it continues. It reports whether it handled the turn.
func (g *Gateway) usageLimited(ctx context.Context, t *turn, res codex.TurnResult, err error) bool {
	if err != nil || res.Status != codex.TurnFailed || !res.Error.IsUsageLimit() {
		return false
	}
	t.stopStream()
	until := g.usageResetTime()
	g.pauseForUsage(until)
	g.log.Warn("turn.usage_limited", zap.String("lane", t.l.key), zap.String("thread", t.thread),
		zap.String("turn", res.TurnID), zap.Time("until", until))
	g.obs.TurnFinished("usage_limited", g.now().Sub(t.started))
	g.journal.clear(ctx, t.l.key)
	g.requeueForReset(t.l, t.it)
	u := g.usage
	u.mu.Lock()
	tell := !u.told[t.l.key]
	u.told[t.l.key] = true
	u.mu.Unlock()
	if tell {
		g.saveUsagePause()
		// A lane notice, not an answer to the message: the message's answer
		// is the reply that comes after the reset (the API lane ends a
		// request at the first answer to it).
		g.out.notify(ctx, t.l.addr, "", g.usageLimitNotice(until))
	}
	return true
}

// requeueForReset puts the item back at the head of the lane's queue,
// followed by the messages steered into the refused turn (uncommitted too,
// so each runs as its own turn); the worker running it parks them at its
// next step (the gate is paused).
func (g *Gateway) requeueForReset(l *lane, it item) {
	l.mu.Lock()
	cur := l.cur
	l.mu.Unlock()
	items := []item{it}
	if cur != nil {
		for _, s := range cur.steer.close() {
			items = append(items, item{kind: itemTurn, inboundID: s.InboundID, msgID: s.MessageID, text: s.Text})
		}
	}
	l.mu.Lock()
	l.queue.prepend(items)
	g.sched.queued.Add(int64(len(items)))
	l.mu.Unlock()
}

// usageResetTime is when the reached limit resets: the latest reset of
// the used-up windows codex reported, else a fixed wait.
func (g *Gateway) usageResetTime() time.Time {
	now := g.now()
	if snap, ok := g.cx.LastRateLimits(); ok {
		if until, reached := snap.ReachedUntil(now); reached {
			return until
		}
	}
	return now.Add(usageLimitFallback)
}

// usageLimitNotice tells a lane when work continues, in the daemon's local
// time with its zone (and the weekday when that is not within a day).
func (g *Gateway) usageLimitNotice(until time.Time) string {
	return fmt.Sprintf("Codex usage limit reached; I'll continue at %s. Your waiting messages run then (send /retry to try sooner).",
		clockTime(until, g.now()))
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
func (g *Gateway) retryAfterLimit(ctx context.Context, l *lane, inboundID int64, msgID string) bool {
	g.usage.mu.Lock()
	_, parked := g.usage.waiting[l.key]
	g.usage.mu.Unlock()
	if !g.resumeLanes("retry") {
		return false
	}
	l.mu.Lock()
	waiting := l.queue.len() > 0 || l.cur != nil
	l.mu.Unlock()
	if !parked && !waiting {
		return false // nothing of this lane waited: retry its last message as usual
	}
	g.out.notify(ctx, l.addr, msgID, "Trying Codex again now; your waiting messages run in order.")
	g.inbox.set(ctx, inboundID, store.InboundDone)
	return true
}

// usagePauseStatus is the /status line of a pause in force ("" if none).
func (g *Gateway) usagePauseStatus() string {
	until, paused := g.usage.pausedUntil(g.now())
	if !paused {
		return ""
	}
	return "Paused: Codex usage limit reached; continuing at " + clockTime(until, g.now()) + "\n"
}

// usageLimitModule pauses turns while Codex's usage limit is reached and
// requeues a turn that failed on it.
func usageLimitModule(g *Gateway) module {
	return moduleFunc(func(h *host) {
		h.hooks.result = append(h.hooks.result, g.usageLimited)
	})
}
