package codex_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// askDatabase is the model's request_user_input call of these tests.
func askDatabase() *codextest.ToolCall {
	return codextest.AskUser("call_ask", codextest.AskedQuestion{ID: "db", Header: "Database",
		Question: "Which database should I use?", Options: []string{"SQLite (Recommended)", "PostgreSQL"}})
}

// TestIntegrationPlanModeQuestion: a turn in Plan mode offers the model
// request_user_input; its question reaches the UserInput handler with the
// options, and the model's follow-up carries the answer. In Default mode
// the tool is refused by codex itself, and an unanswered question tells
// the model so.
func TestIntegrationPlanModeQuestion(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	m.Respond(func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp && strings.HasPrefix(req.LastUserText(), "ask") {
			return codextest.Reply{ToolCall: askDatabase()}
		}
		return codextest.DefaultReply(req)
	})
	var mu sync.Mutex
	var asked []codex.UserInputRequest
	answer := map[string][]string{"db": {"PostgreSQL"}}
	answered := true
	c := startClient(t, m, codextest.Home(t), func(o *codex.Options) {
		o.UserInput = func(_ context.Context, req codex.UserInputRequest) (map[string][]string, bool) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, req)
			return answer, answered
		}
	})
	th, err := c.EnsureThread(ctx, "", codex.ThreadConfig{})
	if err != nil {
		t.Fatalf("EnsureThread: %v", err)
	}
	run := func(text, mode string) string {
		t.Helper()
		before := len(m.RequestsForThread(th.ThreadID))
		res, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: text, Model: codextest.ModelName, Mode: mode}, codex.TurnEvents{})
		if err != nil || res.Status != codex.TurnCompleted {
			t.Fatalf("RunTurn(%q, %q): %v, status %q (%+v)", text, mode, err, res.Status, res.Error)
		}
		reqs := m.RequestsForThread(th.ThreadID)[before:]
		if len(reqs) < 2 {
			t.Fatalf("model requests = %d, want the call and its follow-up", len(reqs))
		}
		if names := reqs[0].ToolNames(); !slices.Contains(names, "request_user_input") {
			t.Errorf("model tools = %v, want request_user_input", names)
		}
		out, _ := reqs[1].ToolOutput()
		t.Logf("%s/%s: tool output %q", text, mode, out)
		return out
	}

	out := run("ask in plan mode", codex.ModePlan)
	if !strings.Contains(out, "PostgreSQL") {
		t.Errorf("follow-up tool output = %q, want the chosen label", out)
	}
	mu.Lock()
	if len(asked) != 1 || asked[0].ThreadID != th.ThreadID || len(asked[0].Questions) != 1 {
		t.Fatalf("questions asked = %+v, want one request of the thread", asked)
	}
	q := asked[0].Questions[0]
	if q.ID != "db" || q.Header != "Database" || q.Question != "Which database should I use?" ||
		len(q.Options) != 2 || q.Options[1].Label != "PostgreSQL" || q.Options[0].Description != "about SQLite (Recommended)" {
		t.Errorf("question = %+v", q)
	}
	answered = false
	mu.Unlock()

	out = run("ask again, nobody answers", "")
	if strings.Contains(out, "PostgreSQL") {
		t.Errorf("unanswered question's tool output = %q, carries an old answer", out)
	}

	out = run("ask in default mode", codex.ModeDefault)
	if !strings.Contains(out, "Default mode") {
		t.Errorf("default mode tool output = %q, want codex's refusal", out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 2 {
		t.Errorf("handler called %d times, want 2 (Plan mode sticks to the thread; Default refuses)", len(asked))
	}
}
