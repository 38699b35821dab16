package gateway

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway/feature/usage"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// fakeTimers replaces the usage gate's time.AfterFunc: the test fires the
// latest timer by hand after moving the fake clock.
type fakeTimers struct {
	mu      sync.Mutex
	fns     []func()
	delays  []time.Duration
	stopped []bool
}

func (ft *fakeTimers) after(d time.Duration, f func()) func() bool {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	i := len(ft.fns)
	ft.fns, ft.delays, ft.stopped = append(ft.fns, f), append(ft.delays, d), append(ft.stopped, false)
	return func() bool {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		was := !ft.stopped[i]
		ft.stopped[i] = true
		return was
	}
}

// fireLast runs the latest timer unless it was stopped; it reports the
// delay it was armed with.
func (ft *fakeTimers) fireLast(t *testing.T) time.Duration {
	t.Helper()
	ft.mu.Lock()
	if len(ft.fns) == 0 {
		ft.mu.Unlock()
		t.Fatal("no resume timer was armed")
	}
	i := len(ft.fns) - 1
	f, d, stopped := ft.fns[i], ft.delays[i], ft.stopped[i]
	ft.mu.Unlock()
	if stopped {
		t.Fatal("the resume timer was stopped")
	}
	f()
	return d
}

func (ft *fakeTimers) armed() int {
	ft.mu.Lock()
	defer ft.mu.Unlock()
	return len(ft.fns)
}

// limitCodex is the fake codex with the account's rate-limit windows.
type limitCodex struct {
	*fakeCodex
	mu   sync.Mutex
	snap codex.RateLimits
	has  bool
}

func (c *limitCodex) LastRateLimits() (codex.RateLimits, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.snap, c.has
}

func (c *limitCodex) setLimits(r codex.RateLimits) {
	c.mu.Lock()
	c.snap, c.has = r, true
	c.mu.Unlock()
}

// limitHarness is a harness whose codex fails every turn with the usage
// limit while limited is set, and whose resume timer the test fires.
type limitHarness struct {
	*harness
	lcx     *limitCodex
	timers  *fakeTimers
	usage   *usage.Limits // the usage feature, over lcx and timers
	limited atomic.Bool
}

func newLimitHarness(t *testing.T, opts ...harnessOpt) *limitHarness {
	t.Helper()
	h := newHarness(t, opts...)
	lh := &limitHarness{harness: h, lcx: &limitCodex{fakeCodex: h.cx}, timers: &fakeTimers{}}
	lh.usage = usage.New(h.st, lh.lcx, lh.timers.after)
	g, err := New(withFeatures(h.g.cfg, lh.usage), h.st, lh.lcx)
	if err != nil {
		t.Fatal(err)
	}
	g.AddPlatform(h.p)
	h.g = g
	h.cx.run = func(_ context.Context, _, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		if lh.limited.Load() {
			return codex.TurnResult{Status: codex.TurnFailed, Error: &codex.TurnError{
				Message: "You've hit your usage limit.", Kind: codex.InfoUsageLimitExceeded}}, nil
		}
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "re: " + text}, nil
	}
	return lh
}

func (h *limitHarness) parked(key string) bool {
	return h.usage.Parked(key)
}

// notices returns the outbox texts of a lane containing substr.
func (h *limitHarness) notices(key, substr string) []string {
	h.st.mu.Lock()
	defer h.st.mu.Unlock()
	var out []string
	for _, m := range h.st.outbox {
		if m.SessionKey == key && strings.Contains(m.Text, substr) {
			out = append(out, m.Text)
		}
	}
	return out
}

func (h *limitHarness) turnsOf(prefix string) []string {
	_, _, turns := h.cx.snapshot()
	var out []string
	for _, tr := range turns {
		if _, text, _ := strings.Cut(tr, ":"); strings.HasPrefix(text, prefix) {
			out = append(out, text)
		}
	}
	return out
}

// awaitReplies waits until every id got its reply ("re: " text), in any
// order across lanes; the usage notices replying to them are skipped.
func (h *limitHarness) awaitReplies(t *testing.T, ids ...string) {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	for len(want) > 0 {
		o := h.p.next(t)
		if o.Kind == OutPreview || !want[o.InReplyTo] || strings.HasPrefix(o.Text, limitPrefix) {
			continue
		}
		if !strings.HasPrefix(o.Text, "re: ") {
			t.Errorf("reply to %s = %q", o.InReplyTo, o.Text)
		}
		delete(want, o.InReplyTo)
	}
}

const limitPrefix = "Codex usage limit reached; I'll continue at "

// TestUsageLimitPausesTellsOnceAndResumes: a turn failing on the usage
// limit pauses every lane; its message and the ones queued after it (on
// its lane and another) wait in the inbox, each lane is told once when
// work continues, and at the reset the queues run in order, none lost.
func TestUsageLimitPausesTellsOnceAndResumes(t *testing.T) {
	h := newLimitHarness(t)
	h.start(t)
	a, b := apiAddr("a").SessionKey(), apiAddr("b").SessionKey()
	h.limited.Store(true)
	h.send(t, "a", "a1", "A one")
	waitFor(t, "lane a parked", func() bool { return h.parked(a) })
	h.send(t, "a", "a2", "A two")
	h.send(t, "a", "a3", "A three")
	h.send(t, "b", "b1", "B one")
	waitFor(t, "lane b parked", func() bool { return h.parked(b) })
	// A lane is told right after it parks, on its worker: wait for it.
	waitFor(t, "both lanes told", func() bool {
		return len(h.notices(a, limitPrefix)) > 0 && len(h.notices(b, limitPrefix)) > 0
	})

	reset := h.clock.Now().Add(usage.LimitFallback)
	want := limitPrefix + usage.ClockTime(reset, h.clock.Now())
	if got := h.turnsOf(""); len(got) != 1 || got[0] != "A one" {
		t.Fatalf("turns during the pause = %q, want only the one that hit the limit", got)
	}
	for _, key := range []string{a, b} {
		if n := h.notices(key, limitPrefix); len(n) != 1 || !strings.HasPrefix(n[0], want) {
			t.Fatalf("lane %s usage notices = %q, want one starting %q", key, n, want)
		}
	}
	if n := h.notices(a, "waiting here"); len(n) != 0 {
		t.Errorf("lane a also got queued notices %q", n)
	}
	for id := int64(1); id <= 4; id++ {
		if s := h.st.inboundState(id); s != store.InboundReceived {
			t.Errorf("inbound %d is %q during the pause, want received (a restart runs it)", id, s)
		}
	}
	if j, _ := h.st.Journal(context.Background()); len(j) != 0 {
		t.Errorf("journal during the pause = %+v, want empty (nothing was cut off)", j)
	}
	if st := h.g.controls.status(context.Background(), h.g.lanes.get(apiAddr("a"))); !strings.Contains(st, "Paused: Codex usage limit reached") {
		t.Errorf("/status during the pause:\n%s\nwant the pause named", st)
	}

	h.limited.Store(false)
	h.clock.Advance(usage.LimitFallback)
	if d := h.timers.fireLast(t); d != usage.LimitFallback {
		t.Errorf("resume timer armed for %v, want %v", d, usage.LimitFallback)
	}
	h.awaitReplies(t, "a1", "a2", "a3", "b1")
	if got := h.turnsOf("A"); strings.Join(got, "|") != "A one|A one|A two|A three" {
		t.Errorf("lane a turns = %q, want the failed one rerun first, then the queue in order", got)
	}
	for _, key := range []string{a, b} {
		if n := h.notices(key, limitPrefix); len(n) != 1 {
			t.Errorf("lane %s told %d times, want once", key, len(n))
		}
	}
	for id := int64(1); id <= 4; id++ {
		if s := h.st.inboundState(id); s != store.InboundDone {
			t.Errorf("inbound %d is %q after the reset, want done", id, s)
		}
	}
}

// TestUsageLimitRetryResumesAtOnce: /retry during the pause lifts it; the
// lane's waiting message runs once more (not a second copy) and the timer
// is stopped.
func TestUsageLimitRetryResumesAtOnce(t *testing.T) {
	h := newLimitHarness(t)
	h.start(t)
	a := apiAddr("a").SessionKey()
	h.limited.Store(true)
	h.send(t, "a", "a1", "A one")
	waitFor(t, "lane a parked", func() bool { return h.parked(a) })
	h.limited.Store(false)
	h.send(t, "a", "r1", "/retry")
	// The rerun's reply may come before the /retry answer.
	var retried, answered bool
	for !retried || !answered {
		o := h.p.next(t)
		switch {
		case o.InReplyTo == "r1":
			retried = true
			if !strings.Contains(o.Text, "Trying Codex again now") {
				t.Errorf("/retry answer = %q", o.Text)
			}
		case o.InReplyTo == "a1" && strings.HasPrefix(o.Text, "re: "):
			answered = true
		}
	}
	if got := h.turnsOf("A"); len(got) != 2 {
		t.Errorf("turns = %q, want the failed one and one rerun", got)
	}
	if _, paused := h.usage.PausedUntil(); paused {
		t.Error("still paused after /retry")
	}
	h.timers.mu.Lock()
	stopped := h.timers.stopped[len(h.timers.stopped)-1]
	h.timers.mu.Unlock()
	if !stopped {
		t.Error("the resume timer still runs after /retry")
	}
}

// TestUsagePauseFromRateLimitWindows: when codex's last windows say the
// limit is used up, no turn is tried until the window resets, and /status
// shows the windows.
func TestUsagePauseFromRateLimitWindows(t *testing.T) {
	h := newLimitHarness(t)
	reset := h.clock.Now().Add(30 * time.Minute)
	h.lcx.setLimits(codex.RateLimits{Windows: []codex.RateLimitWindow{
		{Name: "primary", UsedPercent: 100, WindowMinutes: 300, ResetsAt: reset},
		{Name: "secondary", UsedPercent: 42, WindowMinutes: 10080, ResetsAt: reset.Add(48 * time.Hour)},
	}})
	h.start(t)
	a := apiAddr("a").SessionKey()
	h.send(t, "a", "a1", "A one")
	waitFor(t, "lane a parked", func() bool { return h.parked(a) })
	if got := h.turnsOf(""); len(got) != 0 {
		t.Fatalf("turns while the windows say the limit is reached = %q, want none", got)
	}
	want := limitPrefix + usage.ClockTime(reset, h.clock.Now())
	if n := h.notices(a, limitPrefix); len(n) != 1 || !strings.HasPrefix(n[0], want) {
		t.Fatalf("notices = %q, want one starting %q", n, want)
	}
	st := h.g.controls.status(context.Background(), h.g.lanes.get(apiAddr("a")))
	for _, line := range []string{"Codex limits: 5h window 100% used, resets " + usage.ClockTime(reset, h.clock.Now()),
		"weekly window 42% used, resets " + usage.ClockTime(reset.Add(48*time.Hour), h.clock.Now())} {
		if !strings.Contains(st, line) {
			t.Errorf("/status:\n%s\nwant it to contain %q", st, line)
		}
	}
	h.clock.Advance(30 * time.Minute)
	h.timers.fireLast(t)
	h.awaitReplies(t, "a1")
	if h.timers.armed() != 1 {
		t.Errorf("%d timers armed, want 1 (a passed window does not pause again)", h.timers.armed())
	}
}

// TestUsageLimitRequeuesSteeredMessages: messages steered into the turn
// that hit the limit are not committed with it; after the reset each runs
// as its own turn, after the refused one.
func TestUsageLimitRequeuesSteeredMessages(t *testing.T) {
	h := newLimitHarness(t, withBusy(BusySteer))
	entered, release := make(chan string, 8), make(chan struct{})
	limited := h.cx.run
	h.cx.run = func(ctx context.Context, thread, text string, ev codex.TurnEvents) (codex.TurnResult, error) {
		entered <- text
		if text == "slow one" {
			<-release
		}
		return limited(ctx, thread, text, ev)
	}
	h.cx.steerFn = func(string, string) error { return nil }
	h.start(t)
	a := apiAddr("a").SessionKey()
	h.limited.Store(true)
	h.send(t, "a", "a1", "slow one")
	<-entered
	h.send(t, "a", "a2", "steered two")
	if o := h.p.replyTo(t, "a2"); o.Text != steeredNotice {
		t.Fatalf("a2 answered %q, want the steered notice", o.Text)
	}
	close(release)
	waitFor(t, "lane a parked", func() bool { return h.parked(a) })
	if s := h.st.inboundState(2); s != store.InboundReceived {
		t.Errorf("steered inbound is %q during the pause, want received", s)
	}
	h.limited.Store(false)
	h.clock.Advance(usage.LimitFallback)
	h.timers.fireLast(t)
	h.awaitReplies(t, "a1", "a2")
	if got := h.turnsOf(""); strings.Join(got, "|") != "slow one|slow one|steered two" {
		t.Errorf("turns = %q, want the refused turn rerun, then the steered message as its own turn", got)
	}
}

// TestUsageLimitRequeuedSteerKeepsItsSender: a steered message put back by
// the pause runs, after the reset, as its sender's turn: in a
// shared room they, not anyone, decide what it asks.
func TestUsageLimitRequeuedSteerKeepsItsSender(t *testing.T) {
	h := newLimitHarness(t, withBusy(BusySteer))
	entered, release := make(chan string, 8), make(chan struct{})
	requesters := make(chan string, 8)
	limited := h.cx.run
	h.cx.run = func(ctx context.Context, thread, text string, ev codex.TurnEvents) (codex.TurnResult, error) {
		entered <- text
		if text == "slow one" {
			<-release
		}
		if text == "steered two" {
			id, _ := h.g.lanes.requesterOfThread(thread)
			requesters <- id
		}
		return limited(ctx, thread, text, ev)
	}
	h.cx.steerFn = func(string, string) error { return nil }
	h.start(t)
	h.limited.Store(true)
	h.send(t, "a", "a1", "slow one")
	<-entered
	h.send(t, "a", "a2", "steered two")
	h.p.replyTo(t, "a2")
	close(release)
	waitFor(t, "lane a parked", func() bool { return h.parked(apiAddr("a").SessionKey()) })
	h.limited.Store(false)
	h.clock.Advance(usage.LimitFallback)
	h.timers.fireLast(t)
	h.awaitReplies(t, "a1", "a2")
	if id := <-requesters; id != "u1" {
		t.Errorf("the requeued steered message ran as %q's turn, want u1's", id)
	}
}

// TestRetryOverridesUsedUpWindows: /retry during a pause that codex's
// windows caused runs the waiting message even though the windows still
// say 100% until the reset; it is not parked again.
func TestRetryOverridesUsedUpWindows(t *testing.T) {
	h := newLimitHarness(t)
	reset := h.clock.Now().Add(30 * time.Minute)
	h.lcx.setLimits(codex.RateLimits{Windows: []codex.RateLimitWindow{
		{Name: "primary", UsedPercent: 100, WindowMinutes: 300, ResetsAt: reset}}})
	h.start(t)
	a := apiAddr("a").SessionKey()
	h.send(t, "a", "a1", "A one")
	waitFor(t, "lane a parked", func() bool { return h.parked(a) })
	h.send(t, "a", "r1", "/retry")
	h.awaitReplies(t, "a1")
	if got := h.turnsOf("A"); len(got) != 1 {
		t.Errorf("turns = %q, want the waiting message run once", got)
	}
	h.send(t, "a", "a2", "A two")
	h.awaitReplies(t, "a2")
	if n := h.notices(a, limitPrefix); len(n) != 1 {
		t.Errorf("usage notices = %q, want only the first pause's", n)
	}
}
