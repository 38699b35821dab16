package goal

import (
	"context"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

type fakeStore struct{ lane store.Lane }

func (s fakeStore) Lane(context.Context, string) (store.Lane, error) { return s.lane, nil }

// fakeRuntime keeps one goal per thread, as codex does, and hands the
// watchers to the test.
type fakeRuntime struct {
	mu       sync.Mutex
	goals    map[string]codex.Goal
	setErr   error
	onGoal   func(codex.GoalUpdate)
	onTurn   func(codex.AutoTurn)
	setCalls []string
}

func (r *fakeRuntime) SetGoal(_ context.Context, thread, objective string, budget int64) (codex.Goal, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.setCalls = append(r.setCalls, thread)
	if r.setErr != nil {
		return codex.Goal{}, r.setErr
	}
	g := codex.Goal{ThreadID: thread, Objective: objective, Status: codex.GoalActive, TokenBudget: budget}
	r.goals[thread] = g
	return g, nil
}

func (r *fakeRuntime) ThreadGoal(_ context.Context, thread string) (codex.Goal, bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	g, ok := r.goals[thread]
	return g, ok, nil
}

func (r *fakeRuntime) ClearGoal(_ context.Context, thread string) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	_, ok := r.goals[thread]
	delete(r.goals, thread)
	return ok, nil
}

func (r *fakeRuntime) OnGoal(fn func(codex.GoalUpdate))   { r.onGoal = fn }
func (r *fakeRuntime) OnAutoTurn(fn func(codex.AutoTurn)) { r.onTurn = fn }

var laneAddr = chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}

type fixture struct {
	h    *exttest.Host
	lane *exttest.Lane
	cx   *fakeRuntime
	g    *Goals
}

// newFixture is the feature over a lane whose thread T1 is loaded.
func newFixture(t *testing.T) *fixture {
	h := exttest.NewHost(t)
	l := &exttest.Lane{Addr: laneAddr, Thread: "T1"}
	h.Threads = map[string]ext.Lane{"T1": l}
	cx := &fakeRuntime{goals: map[string]codex.Goal{}}
	g := New(fakeStore{lane: store.Lane{SessionKey: l.Key(), ThreadID: "T1"}}, cx)
	h.Register(t, g)
	g.out.Spawn = func(f func()) { f() } // notices are read right after each update
	return &fixture{h: h, lane: l, cx: cx, g: g}
}

// command runs /goal args and its queued task, and returns the notices
// it sent.
func (f *fixture) command(t *testing.T, args string) []exttest.Notice {
	t.Helper()
	before := len(f.h.Notices())
	f.h.Run(context.Background(), f.lane, "goal", args, "m1")
	f.lane.RunQueued(context.Background())
	return f.h.Notices()[before:]
}

func one(t *testing.T, ns []exttest.Notice) string {
	t.Helper()
	if len(ns) != 1 || ns[0].Addr != laneAddr {
		t.Fatalf("notices %+v, want one in the lane", ns)
	}
	return ns[0].Text
}

func TestGoalSetShowOff(t *testing.T) {
	f := newFixture(t)
	got := one(t, f.command(t, "make the tests pass budget 50k"))
	if !strings.Contains(got, "Goal set: make the tests pass") || !strings.Contains(got, "budget 50,000 tokens") {
		t.Errorf("set answer = %q", got)
	}
	if g := f.cx.goals["T1"]; g.Objective != "make the tests pass" || g.TokenBudget != 50_000 {
		t.Errorf("codex got %+v, want the objective and a 50,000 budget", g)
	}
	// Codex reports its work on the goal: the figures /goal shows.
	f.cx.onGoal(codex.GoalUpdate{ThreadID: "T1", TurnID: "u1", Goal: codex.Goal{ThreadID: "T1",
		Objective: "make the tests pass", Status: codex.GoalActive, TokenBudget: 50_000, TokensUsed: 1234}})
	f.cx.goals["T1"] = codex.Goal{ThreadID: "T1", Objective: "make the tests pass", Status: codex.GoalActive,
		TokenBudget: 50_000, TokensUsed: 1234, TimeUsedSeconds: 75}
	got = one(t, f.command(t, ""))
	want := "Goal (active): make the tests pass\n1,234 tokens used of a budget of 50,000, 1m15s."
	if got != want {
		t.Errorf("/goal = %q, want %q", got, want)
	}
	if got := one(t, f.command(t, "off")); !strings.HasPrefix(got, "Goal cleared") {
		t.Errorf("/goal off = %q", got)
	}
	if got := one(t, f.command(t, "")); !strings.HasPrefix(got, "This conversation has no goal.") {
		t.Errorf("/goal after off = %q", got)
	}
	if got := one(t, f.command(t, "off")); got != "This conversation has no goal." {
		t.Errorf("/goal off again = %q", got)
	}
}

func TestGoalRefusals(t *testing.T) {
	f := newFixture(t)
	for _, args := range []string{"budget 100", "tests budget lots", "tests budget -5"} {
		if got := one(t, f.command(t, args)); got != usageText {
			t.Errorf("/goal %s = %q, want the usage", args, got)
		}
	}
	f.lane.Busy = true
	if got := one(t, f.command(t, "tests")); got != ext.BetweenTurnsText("goal") {
		t.Errorf("/goal mid-turn = %q, want the between-turns notice", got)
	}
	f.lane.Busy = false
	f.lane.ThreadErr = ext.ErrNoThread
	f.h.Threads = nil // nothing loaded either: /goal loads the thread
	if got := one(t, f.command(t, "")); !strings.Contains(got, "no Codex thread yet") {
		t.Errorf("/goal without a thread = %q", got)
	}
	f.lane.ThreadErr = nil
	f.cx.setErr = &codex.RPCError{Method: "thread/goal/set", Code: -32600, Message: "ephemeral thread does not support goals"}
	if got := one(t, f.command(t, "tests")); got != "Could not set the goal: ephemeral thread does not support goals" {
		t.Errorf("/goal refused by codex = %q", got)
	}
	if len(f.cx.setCalls) != 1 {
		t.Errorf("SetGoal calls = %v, want only the last one", f.cx.setCalls)
	}
}

// TestGoalEndToldOnce: codex repeats an ended goal's status with each
// update; the lane hears it once, with its figures. A snapshot outside a
// turn (a resume) is not news.
func TestGoalEndToldOnce(t *testing.T) {
	f := newFixture(t)
	goal := codex.Goal{ThreadID: "T1", Objective: "ship it", Status: codex.GoalActive, TokensUsed: 100}
	f.cx.onGoal(codex.GoalUpdate{ThreadID: "T1", Goal: goal})
	f.cx.onGoal(codex.GoalUpdate{ThreadID: "T1", TurnID: "u1", Goal: goal})
	goal.Status, goal.TokensUsed, goal.TokenBudget = codex.GoalBudgetLimited, 1800, 1500
	for i := 0; i < 3; i++ {
		f.cx.onGoal(codex.GoalUpdate{ThreadID: "T1", TurnID: "u2", Goal: goal})
	}
	want := "Goal stopped: out of its token budget: ship it\n1,800 tokens used of a budget of 1,500."
	if got := one(t, f.h.Notices()); got != want {
		t.Errorf("notice = %q, want %q", got, want)
	}
	// After a restart the resume's snapshot says what it is: not told again.
	f2 := newFixture(t)
	f2.cx.onGoal(codex.GoalUpdate{ThreadID: "T1", Goal: goal})
	f2.cx.onGoal(codex.GoalUpdate{ThreadID: "T1", TurnID: "u3", Goal: goal})
	if n := f2.h.Notices(); len(n) != 0 {
		t.Errorf("notices after a snapshot = %+v, want none", n)
	}
	// A thread no lane has is logged, not told anywhere.
	f2.cx.onGoal(codex.GoalUpdate{ThreadID: "T9", TurnID: "u4", Goal: codex.Goal{ThreadID: "T9", Status: codex.GoalComplete}})
	if n := f2.h.Notices(); len(n) != 0 {
		t.Errorf("notices for a thread without lane = %+v", n)
	}
	goals := f2.g.LaneGoals(context.Background())
	if len(goals) != 1 || goals[f2.lane.Key()].Status != codex.GoalBudgetLimited {
		t.Errorf("LaneGoals = %+v, want T1's by its lane (T9 has none)", goals)
	}
}

// TestGoalAutoTurns: the answers of the turns codex ran on its own for
// the goal reach the lane, in order, before the goal's end.
func TestGoalAutoTurns(t *testing.T) {
	f := newFixture(t)
	f.cx.onGoal(codex.GoalUpdate{ThreadID: "T1", Goal: codex.Goal{ThreadID: "T1", Objective: "x", Status: codex.GoalActive}})
	f.cx.onTurn(codex.AutoTurn{ThreadID: "T1", TurnID: "a1", Status: codex.TurnCompleted, Text: "Ran the tests: 2 fail."})
	f.cx.onTurn(codex.AutoTurn{ThreadID: "T1", TurnID: "a2", Status: codex.TurnCompleted})
	f.cx.onTurn(codex.AutoTurn{ThreadID: "T1", TurnID: "a3", Status: codex.TurnFailed})
	f.cx.onGoal(codex.GoalUpdate{ThreadID: "T1", TurnID: "a4", Goal: codex.Goal{ThreadID: "T1", Objective: "x",
		Status: codex.GoalComplete, TokensUsed: 116158, TimeUsedSeconds: 3}})
	f.cx.onTurn(codex.AutoTurn{ThreadID: "T1", TurnID: "a4", Status: codex.TurnCompleted, Text: "All tests pass."})
	var texts []string
	for _, n := range f.h.Notices() {
		texts = append(texts, n.Text)
	}
	want := []string{"Ran the tests: 2 fail.", "Codex's turn on the goal failed.",
		"Goal met: x\n116,158 tokens used, 3s.", "All tests pass."}
	if strings.Join(texts, "|") != strings.Join(want, "|") {
		t.Errorf("notices = %q, want %q", texts, want)
	}
}

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name, args string
		objective  string
		budget     int64
		ok         bool
	}{
		{"plain", "make  the tests pass", "make  the tests pass", 0, true},
		{"budget", "fix it budget 20000", "fix it", 20000, true},
		{"budget k", "fix it BUDGET 50k", "fix it", 50_000, true},
		{"budget m", "fix it budget 2m", "fix it", 2_000_000, true},
		{"budget word inside", "set a budget for the team", "set a budget for the team", 0, true},
		{"only budget", "budget 10", "", 0, false},
		{"zero", "x budget 0", "", 0, false},
		{"not a number", "x budget many", "", 0, false},
		{"too large", "x budget 99999999999999m", "", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, b, ok := ParseArgs(tt.args)
			if o != tt.objective || b != tt.budget || ok != tt.ok {
				t.Errorf("ParseArgs(%q) = %q, %d, %v; want %q, %d, %v", tt.args, o, b, ok, tt.objective, tt.budget, tt.ok)
			}
		})
	}
}

func TestTokens(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 116158: "116,158", 1234567: "1,234,567"} {
		if got := Tokens(n); got != want {
			t.Errorf("Tokens(%d) = %q, want %q", n, got, want)
		}
	}
}

// Any text parses without a panic, and an objective is the start of what
// was sent, whole characters only: characters whose lowercase is longer
// or shorter (Ⱥ, İ, the Kelvin sign) once cut the text at a wrong index.
func FuzzParseArgs(f *testing.F) {
	for _, seed := range []string{"ȺȺȺȺȺȺȺȺȺȺȺȺ budget 5", "İİİİ BUDGET 50k", "KKK budget 2m", "budget 5", "fix it budget", "x budget 1_000"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, args string) {
		objective, budget, ok := ParseArgs(args)
		if !ok {
			return
		}
		if !strings.HasPrefix(strings.TrimSpace(args), objective) || objective == "" || budget < 0 {
			t.Fatalf("ParseArgs(%q) = %q, %d", args, objective, budget)
		}
		if utf8.ValidString(args) && !utf8.ValidString(objective) {
			t.Fatalf("ParseArgs(%q) cut a character: %q", args, objective)
		}
	})
}

// With lanes.budget_tokens_per_day on, codex's goal turns (which the daily
// budget does not stop) are bounded by the goal's own budget: a goal
// without one, or with more than a day's, is refused with the way to set it.
func TestGoalUnderADailyBudgetNeedsABudget(t *testing.T) {
	f := newFixture(t)
	f.g.WithDailyBudget(10_000)
	for _, args := range []string{"refactor everything", "refactor everything budget 20k"} {
		got := one(t, f.command(t, args))
		if !strings.Contains(got, "daily budget of 10000 tokens") || !strings.Contains(got, "/goal refactor everything budget 10000") {
			t.Errorf("/goal %s under a daily budget = %q", args, got)
		}
	}
	if len(f.cx.setCalls) != 0 {
		t.Fatalf("codex was given a goal past the daily budget: %v", f.cx.setCalls)
	}
	if got := one(t, f.command(t, "refactor everything budget 10k")); !strings.Contains(got, "Goal set") {
		t.Errorf("/goal within the daily budget = %q", got)
	}
}
