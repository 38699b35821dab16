package codex_test

import (
	"context"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// goalEvents collects what a client's goal and auto-turn watchers heard.
type goalEvents struct {
	goals chan codex.GoalUpdate
	turns chan codex.AutoTurn
}

func watchGoals(c *codex.Client) *goalEvents {
	ev := &goalEvents{goals: make(chan codex.GoalUpdate, 256), turns: make(chan codex.AutoTurn, 64)}
	c.OnGoal(func(u codex.GoalUpdate) { ev.goals <- u })
	c.OnAutoTurn(func(t codex.AutoTurn) { ev.turns <- t })
	return ev
}

// waitGoal returns the first goal update of threadID that ok accepts.
func (ev *goalEvents) waitGoal(t *testing.T, ctx context.Context, threadID string, ok func(codex.GoalUpdate) bool) codex.GoalUpdate {
	t.Helper()
	for {
		select {
		case u := <-ev.goals:
			if u.ThreadID == threadID && ok(u) {
				return u
			}
		case <-ctx.Done():
			t.Fatalf("waiting for a goal update of %s: %v", threadID, ctx.Err())
		}
	}
}

func (ev *goalEvents) waitTurn(t *testing.T, ctx context.Context, threadID, text string) codex.AutoTurn {
	t.Helper()
	for {
		select {
		case a := <-ev.turns:
			if a.ThreadID == threadID && a.Text == text {
				return a
			}
		case <-ctx.Done():
			t.Fatalf("waiting for an auto turn of %s saying %q: %v", threadID, text, ctx.Err())
		}
	}
}

func hasStatus(status string) func(codex.GoalUpdate) bool {
	return func(u codex.GoalUpdate) bool { return !u.Cleared && u.Goal.Status == status }
}

// TestIntegrationGoalMet: a goal set on an idle thread makes codex run a
// turn on its own; the model meets the goal there (update_goal), the
// watchers hear the status and the turn's answer, and the goal is read
// back complete, after a restart too (it is codex's, resumed with the
// thread).
func TestIntegrationGoalMet(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	m.Respond(codextest.GoalReply(func(codextest.Request) bool { return true }, "GOAL DONE", codextest.Usage{}))
	home := codextest.Home(t)
	c := startClient(t, m, home)
	ev := watchGoals(c)
	th := ensure(t, ctx, c, "", codex.OutcomeStarted)

	g, err := c.SetGoal(ctx, th.ThreadID, "make the tests pass", 0)
	if err != nil {
		t.Fatalf("SetGoal: %v", err)
	}
	if g.Status != codex.GoalActive || g.Objective != "make the tests pass" || g.TokenBudget != 0 {
		t.Errorf("SetGoal = %+v, want an active goal without a budget", g)
	}
	met := ev.waitGoal(t, ctx, th.ThreadID, hasStatus(codex.GoalComplete))
	if met.TurnID == "" || met.Goal.TokensUsed <= 0 {
		t.Errorf("complete update = %+v, want its turn and the tokens spent", met)
	}
	auto := ev.waitTurn(t, ctx, th.ThreadID, "GOAL DONE")
	if auto.Status != codex.TurnCompleted || auto.TurnID != met.TurnID {
		t.Errorf("auto turn = %+v, want the completed turn %s that met the goal", auto, met.TurnID)
	}
	got, ok, err := c.ThreadGoal(ctx, th.ThreadID)
	if err != nil || !ok || got.Status != codex.GoalComplete || got.TokensUsed != met.Goal.TokensUsed {
		t.Fatalf("ThreadGoal = %+v, %v, %v; want complete with %d tokens", got, ok, err, met.Goal.TokensUsed)
	}
	// A turn of ours after it is ours again: RunTurn reads it, no watcher does.
	completedTurn(t, ctx, c, th.ThreadID, "thanks")

	if err := c.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	c2 := startClient(t, m, home)
	ensure(t, ctx, c2, th.ThreadID, codex.OutcomeResumed)
	again, ok, err := c2.ThreadGoal(ctx, th.ThreadID)
	if err != nil || !ok || again.Status != codex.GoalComplete || again.Objective != "make the tests pass" {
		t.Fatalf("ThreadGoal after a restart = %+v, %v, %v; want the complete goal", again, ok, err)
	}
}

// TestIntegrationGoalBudget: a goal with a token budget that the model's
// answers (600 tokens each, as the fake reports them) exhaust ends
// budgetLimited with the tokens used past the budget; clearing it leaves
// the thread without a goal.
func TestIntegrationGoalBudget(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	never := func(codextest.Request) bool { return false }
	m.Respond(codextest.GoalReply(never, "", codextest.Usage{InputTokens: 400, OutputTokens: 200}))
	c := startClient(t, m, codextest.Home(t))
	ev := watchGoals(c)
	th := ensure(t, ctx, c, "", codex.OutcomeStarted)

	if _, err := c.SetGoal(ctx, th.ThreadID, "refactor everything", 1500); err != nil {
		t.Fatalf("SetGoal: %v", err)
	}
	limited := ev.waitGoal(t, ctx, th.ThreadID, hasStatus(codex.GoalBudgetLimited))
	if limited.Goal.TokenBudget != 1500 || limited.Goal.TokensUsed < 1500 {
		t.Errorf("budgetLimited update = %+v, want budget 1500 and at least that used", limited.Goal)
	}
	cleared, err := c.ClearGoal(ctx, th.ThreadID)
	if err != nil || !cleared {
		t.Fatalf("ClearGoal = %v, %v; want cleared", cleared, err)
	}
	ev.waitGoal(t, ctx, th.ThreadID, func(u codex.GoalUpdate) bool { return u.Cleared })
	if g, ok, err := c.ThreadGoal(ctx, th.ThreadID); err != nil || ok {
		t.Fatalf("ThreadGoal after clear = %+v, %v, %v; want none", g, ok, err)
	}
}
