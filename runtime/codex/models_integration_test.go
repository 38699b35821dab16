package codex_test

import (
	"context"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// pickModel returns the first listed model that supports effort.
func pickModel(t *testing.T, models []codex.Model, effort string) codex.Model {
	t.Helper()
	for _, m := range models {
		if m.SupportsEffort(effort) {
			return m
		}
	}
	t.Fatalf("no listed model supports effort %q: %+v", effort, models)
	return codex.Model{}
}

func runWith(t *testing.T, ctx context.Context, c *codex.Client, threadID string, in codex.TurnInput) {
	t.Helper()
	res, err := c.RunTurn(ctx, threadID, in, codex.TurnEvents{})
	if err != nil || res.Status != codex.TurnCompleted {
		t.Fatalf("RunTurn(%q): status %q, err %v, error %+v", in.Text, res.Status, err, res.Error)
	}
}

func wantModelRequest(t *testing.T, req codextest.Request, model, effort string) {
	t.Helper()
	if got := req.Model(); got != model {
		t.Errorf("model request %d: model = %q, want %q", req.Index, got, model)
	}
	if got := req.ReasoningEffort(); got != effort {
		t.Errorf("model request %d: reasoning.effort = %q, want %q", req.Index, got, effort)
	}
}

// TestIntegrationModelAndEffortReachTheModel: the real app-server lists its
// models, reports its configured default, and a turn/start model and effort
// reach the model request, also after the process is killed and the thread
// resumed, and the default can be restored by naming it.
func TestIntegrationModelAndEffortReachTheModel(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	home := codextest.Home(t)
	a := startClient(t, m, home)

	models, err := a.ListModels(ctx)
	if err != nil {
		t.Fatalf("ListModels: %v", err)
	}
	for _, md := range models {
		if md.ID == "" || len(md.Efforts) == 0 {
			t.Errorf("listed model %+v has no id or no efforts", md)
		}
	}
	chosen := pickModel(t, models, "high")
	defaults, err := a.ModelDefaults(ctx)
	if err != nil {
		t.Fatalf("ModelDefaults: %v", err)
	}
	if defaults.Model != codextest.ModelName {
		t.Errorf("ModelDefaults().Model = %q, want the configured %q", defaults.Model, codextest.ModelName)
	}

	thread := ensure(t, ctx, a, "", codex.OutcomeStarted).ThreadID
	runWith(t, ctx, a, thread, codex.TurnInput{Text: "first", Model: chosen.ID, Effort: "high"})
	wantModelRequest(t, lastRequest(t, m, thread), chosen.ID, "high")

	if n := killCodexGroups(t, home); n != 1 {
		t.Fatalf("killed %d app-server process groups, want exactly 1", n)
	}
	closeClient(t, a)
	waitNoCodex(t, ctx, home)

	b := startClient(t, m, home)
	ensure(t, ctx, b, thread, codex.OutcomeResumed)
	runWith(t, ctx, b, thread, codex.TurnInput{Text: "bare after resume"})
	bare := lastRequest(t, m, thread)
	t.Logf("after resume without model/effort: model %q effort %q", bare.Model(), bare.ReasoningEffort())
	runWith(t, ctx, b, thread, codex.TurnInput{Text: "after resume", Model: chosen.ID, Effort: "high"})
	wantModelRequest(t, lastRequest(t, m, thread), chosen.ID, "high")

	runWith(t, ctx, b, thread, codex.TurnInput{Text: "back to default", Model: defaults.Model, Effort: chosen.DefaultEffort})
	wantModelRequest(t, lastRequest(t, m, thread), codextest.ModelName, chosen.DefaultEffort)
}
