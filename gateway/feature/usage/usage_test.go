package usage

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// fakeStore keeps the saved state, the usage of a lane's last turn and
// the turns spent.
type fakeStore struct {
	mu    sync.Mutex
	state map[string]string
	last  map[string]store.TurnUsage
	spent []spentTurn
	reads int // LaneUsage calls
}

// spentTurn is one committed turn's tokens.
type spentTurn struct {
	key, sender string
	at          time.Time
	tokens      int64
}

func (s *fakeStore) spend(key, sender string, at time.Time, tokens int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.spent = append(s.spent, spentTurn{key, sender, at, tokens})
}

func (s *fakeStore) LaneUsage(_ context.Context, key, sender string, from, to time.Time) (store.UsageTotals, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	var u store.UsageTotals
	for _, t := range s.spent {
		if t.key == key && (sender == "" || t.sender == sender) && !t.at.Before(from) && t.at.Before(to) {
			u.Turns++
			u.Tokens += t.tokens
		}
	}
	return u, nil
}

func (s *fakeStore) LaneUsagePeriods(ctx context.Context, key, sender string, at time.Time, loc *time.Location) (store.UsagePeriods, error) {
	day, month := store.DayStart(at, loc), store.MonthStart(at, loc)
	d, _ := s.LaneUsage(ctx, key, sender, day, day.AddDate(0, 0, 1))
	mo, _ := s.LaneUsage(ctx, key, sender, month, month.AddDate(0, 1, 0))
	return store.UsagePeriods{Day: d, Month: mo}, nil
}

func newFakeStore() *fakeStore {
	return &fakeStore{state: map[string]string{}, last: map[string]store.TurnUsage{}}
}

func (s *fakeStore) SetState(_ context.Context, name, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.state[name] = value
	return nil
}

func (s *fakeStore) State(_ context.Context, name string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state[name], nil
}

func (s *fakeStore) LastTurnUsage(_ context.Context, key string) (store.TurnUsage, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	tu, ok := s.last[key]
	return tu, ok, nil
}

// fakeCodex has no live usage, the given rate-limit windows and, with
// hasCost, codex's estimate of every thread's cost.
type fakeCodex struct {
	limits  codex.RateLimits
	has     bool
	cost    codex.ThreadCost
	hasCost bool
}

func (c *fakeCodex) ThreadUsage(context.Context, string) (codex.ThreadCost, bool, error) {
	if !c.hasCost {
		return codex.ThreadCost{}, false, errors.New("codex: account authentication required")
	}
	return c.cost, true, nil
}

func (c *fakeCodex) RateLimits(context.Context) (codex.RateLimits, error) {
	if !c.has {
		return codex.RateLimits{}, errors.New("codex: no account limits")
	}
	return c.limits, nil
}
func (c *fakeCodex) LastRateLimits() (codex.RateLimits, bool) { return c.limits, c.has }
func (c *fakeCodex) Usage(string) (codex.Usage, bool)         { return codex.Usage{}, false }

// timers records the armed resume timers; the test fires them.
type timers struct {
	mu     sync.Mutex
	delays []time.Duration
	fns    []func()
}

func (tm *timers) after(d time.Duration, f func()) func() bool {
	tm.mu.Lock()
	defer tm.mu.Unlock()
	tm.delays, tm.fns = append(tm.delays, d), append(tm.fns, f)
	return func() bool { return true }
}

func usageLimitResult() codex.TurnResult {
	return codex.TurnResult{Status: codex.TurnFailed, TurnID: "u1", Error: &codex.TurnError{
		Message: "You've hit your usage limit.", Kind: codex.InfoUsageLimitExceeded}}
}

// A turn failing on the usage limit is taken over: requeued, counted,
// the gateway paused for the fallback wait, the lane told once; while
// paused the lanes' workers park and new turns are held; /retry lifts
// the pause and resumes the parked lanes.
func TestUsageLimitPausesParksAndRetries(t *testing.T) {
	h := exttest.NewHost(t)
	st, tm := newFakeStore(), &timers{}
	m := New(st, &fakeCodex{}, tm.after)
	h.Register(t, m)
	ctx := context.Background()
	l := &exttest.Lane{Addr: chat.Address{Platform: "api", ChatID: "a"}}
	tr := &exttest.Turn{L: l, TurnUsage: exttest.TurnUsage{ThreadID: "t1", At: h.Now()}}
	if h.Result(ctx, tr, codex.TurnResult{Status: codex.TurnCompleted}, nil) {
		t.Fatal("a completed turn was taken over")
	}
	if !h.Result(ctx, tr, usageLimitResult(), nil) {
		t.Fatal("a usage-limited turn was not taken over")
	}
	until, paused := m.PausedUntil()
	if !paused || !until.Equal(h.Now().Add(LimitFallback)) || tr.Requeued() != 1 || !h.Holding() {
		t.Fatalf("paused %v until %v requeued %d holding %v", paused, until, tr.Requeued(), h.Holding())
	}
	if f := h.Finished(); len(f) != 1 || f[0] != "usage_limited" {
		t.Errorf("finished %v", f)
	}
	if len(tm.delays) != 1 || tm.delays[0] != LimitFallback {
		t.Errorf("resume timers %v, want one of %v", tm.delays, LimitFallback)
	}
	if !strings.Contains(st.state[usagePauseState], l.Key()) {
		t.Errorf("saved pause %q does not name the told lane", st.state[usagePauseState])
	}
	var waited bool
	if !h.Hold(l, func(wait func() bool) bool { waited = wait(); return waited }) || !waited || !m.Parked(l.Key()) {
		t.Fatalf("worker not parked while paused (waited %v)", waited)
	}
	if n := h.Notices(); len(n) != 1 || !strings.HasPrefix(n[0].Text, "Codex usage limit reached; I'll continue at ") {
		t.Errorf("notices %+v, want the lane told once", n)
	}
	if !h.Retry(ctx, l, "r1") {
		t.Fatal("/retry during the pause was not answered")
	}
	if _, paused := m.PausedUntil(); paused || l.Resumed() != 1 || m.Parked(l.Key()) || h.Holding() {
		t.Errorf("after /retry paused %v resumed %d parked %v", paused, l.Resumed(), m.Parked(l.Key()))
	}
	if n := h.Notices(); len(n) != 2 || n[1].ReplyTo != "r1" || n[1].Text != "Trying Codex again now; your waiting messages run in order." {
		t.Errorf("notices %+v", n)
	}
	if st.state[usagePauseState] != "" {
		t.Errorf("saved pause %q after /retry, want cleared", st.state[usagePauseState])
	}
	if h.Retry(ctx, l, "r2") {
		t.Error("/retry without a pause was answered; the core's retry must run")
	}
}

// A pause saved before a restart is taken up at the start and its told
// lanes are not told again; one that ended meanwhile is cleared.
func TestUsagePauseRestored(t *testing.T) {
	h := exttest.NewHost(t)
	st, tm := newFakeStore(), &timers{}
	until := h.Now().Add(time.Hour)
	st.state[usagePauseState] = `{"until":"` + until.Format(time.RFC3339Nano) + `","told":["api:a"]}`
	m := New(st, &fakeCodex{}, tm.after)
	h.Register(t, m)
	h.Start(context.Background())
	if got, paused := m.PausedUntil(); !paused || !got.Equal(until) || len(tm.delays) != 1 || tm.delays[0] != time.Hour {
		t.Fatalf("restored pause %v until %v timers %v", paused, got, tm.delays)
	}
	ended := newFakeStore()
	ended.state[usagePauseState] = `{"until":"` + h.Now().Add(-time.Minute).Format(time.RFC3339Nano) + `"}`
	h2 := exttest.NewHost(t)
	m2 := New(ended, &fakeCodex{}, tm.after)
	h2.Register(t, m2)
	h2.Start(context.Background())
	if _, paused := m2.PausedUntil(); paused || ended.state[usagePauseState] != "" {
		t.Errorf("an ended pause was restored (%v) or kept (%q)", paused, ended.state[usagePauseState])
	}
}

// Tokens are counted by platform and kind; /status shows the stored
// context and last turn, and the account's windows by name.
func TestTokensAndStatus(t *testing.T) {
	h := exttest.NewHost(t)
	st := newFakeStore()
	reset := h.Now().Add(2 * time.Hour)
	cx := &fakeCodex{has: true, limits: codex.RateLimits{Windows: []codex.RateLimitWindow{
		{WindowMinutes: 300, UsedPercent: 40, ResetsAt: reset}, {WindowMinutes: 7 * 24 * 60, UsedPercent: 12}}}}
	h.Register(t, New(st, cx, nil))
	h.Spent("test", codex.Usage{Turn: codex.TokenCounts{Total: 4200, Input: 4100, CachedInput: 2900, Output: 100, Reasoning: 25}})
	h.Spent("test", codex.Usage{}) // nothing spent: nothing counted
	want := map[string]int64{"test/input": 4100, "test/cached": 2900, "test/output": 100, "test/reasoning": 25}
	got := h.Tokens()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("tokens %s = %d, want %d (all %v)", k, got[k], v, got)
		}
	}
	st.last["k"] = store.TurnUsage{Usage: store.UsageRecord{ContextWindow: 10000, ContextTokens: 2170, TurnTokens: 4200,
		InputTokens: 4100, CachedInputTokens: 2900, OutputTokens: 100, ReasoningTokens: 25}}
	status := h.Status(context.Background(), store.Lane{SessionKey: "k", ThreadID: "t1"})
	for _, line := range []string{
		"Context: 2170 / 10000 tokens (22%) after the last turn\n",
		"Last turn: 4200 tokens (input 4100, of which cached 2900; output 100, of which reasoning 25)\n",
		"Codex limits: 5h window 40% used, resets " + ClockTime(reset, h.Now()) + "; weekly window 12% used\n",
	} {
		if !strings.Contains(status, line) {
			t.Errorf("/status:\n%s\nwant %q", status, line)
		}
	}
	if empty := h.Status(context.Background(), store.Lane{SessionKey: "none"}); !strings.HasPrefix(empty, "Context: no usage reported yet\n") {
		t.Errorf("/status of a lane without usage:\n%s", empty)
	}
}

func TestWindowNameAndClockTime(t *testing.T) {
	for _, c := range []struct {
		w    codex.RateLimitWindow
		want string
	}{
		{codex.RateLimitWindow{WindowMinutes: 300}, "5h window"},
		{codex.RateLimitWindow{WindowMinutes: 7 * 24 * 60}, "weekly window"},
		{codex.RateLimitWindow{WindowMinutes: 120}, "2h window"},
		{codex.RateLimitWindow{WindowMinutes: 45}, "45m window"},
		{codex.RateLimitWindow{Name: "primary"}, "primary window"},
	} {
		if got := windowName(c.w); got != c.want {
			t.Errorf("windowName(%+v) = %q, want %q", c.w, got, c.want)
		}
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.Local)
	if got := ClockTime(now.Add(time.Hour), now); got != now.Add(time.Hour).Format("15:04 MST") {
		t.Errorf("ClockTime within a day = %q", got)
	}
	if got := ClockTime(now.Add(30*time.Hour), now); got != now.Add(30*time.Hour).Format("Mon 15:04 MST") {
		t.Errorf("ClockTime beyond a day = %q, want the weekday", got)
	}
}
