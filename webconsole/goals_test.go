package webconsole_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/gatewayd/gatewayd/platforms/api"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/webconsole"
)

type fakeGoals map[string]codex.Goal

func (f fakeGoals) LaneGoals(context.Context) map[string]codex.Goal { return f }

// TestConsoleGoals: /api/goals lists the lanes' goals by lane, with their
// figures; without a source it answers 503.
func TestConsoleGoals(t *testing.T) {
	w := newConsoleWorld(t, "")
	c := webconsole.NewConsole(webconsole.ConsoleConfig{Store: w.st, Live: w.live, Goals: fakeGoals{
		"v1:api:beta":  {ThreadID: "T2", Objective: "refactor", Status: codex.GoalBudgetLimited, TokenBudget: 1500, TokensUsed: 1800},
		"v1:api:alpha": {ThreadID: "T1", Objective: "tests pass", Status: codex.GoalActive, TokensUsed: 42, TimeUsedSeconds: 3},
	}})
	p := api.New(api.Config{Listen: "127.0.0.1:0", Answers: w.st, Handlers: c.Routes()})
	w.srv.Config.Handler = p.Handler()
	var body struct {
		Goals []map[string]any `json:"goals"`
	}
	if code := w.get(t, "/api/goals", nil, &body); code != http.StatusOK {
		t.Fatalf("GET /api/goals: %d", code)
	}
	if len(body.Goals) != 2 || body.Goals[0]["lane"] != "v1:api:alpha" || body.Goals[1]["lane"] != "v1:api:beta" {
		t.Fatalf("/api/goals = %+v, want alpha's then beta's", body.Goals)
	}
	a, b := body.Goals[0], body.Goals[1]
	if a["objective"] != "tests pass" || a["status"] != "active" || a["tokensUsed"] != float64(42) || a["tokenBudget"] != nil {
		t.Errorf("alpha's goal = %+v, want no budget", a)
	}
	if b["status"] != "budgetLimited" || b["tokenBudget"] != float64(1500) || b["tokensUsed"] != float64(1800) || b["threadId"] != "T2" {
		t.Errorf("beta's goal = %+v", b)
	}
	var none map[string]any
	if code := newToolsWorld(t, "", nil).get(t, "/api/goals", nil, &none); code != http.StatusServiceUnavailable {
		t.Errorf("/api/goals without a source: %d, want 503", code)
	}
}
