package codex_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestIntegrationProgressOfCommand: with the real app-server, a model that
// calls exec_command makes RunTurn report the command started and then
// completed with its exit code and output, before the turn's reply.
func TestIntegrationProgressOfCommand(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	m.Respond(func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp {
			return codextest.Reply{ToolCall: codextest.ExecCommand("call_progress", "echo PROGRESS-$((6*7))")}
		}
		return codextest.Reply{Text: "done"}
	})
	c := startClient(t, m, codextest.Home(t))
	th := ensure(t, ctx, c, "", codex.OutcomeStarted)
	var mu sync.Mutex
	var got []codex.Progress
	res, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "run it"}, codex.TurnEvents{
		Progress: func(p codex.Progress) {
			mu.Lock()
			got = append(got, p)
			mu.Unlock()
		},
	})
	if err != nil || res.Status != codex.TurnCompleted {
		t.Fatalf("RunTurn: %v, status %q", err, res.Status)
	}
	mu.Lock()
	defer mu.Unlock()
	var started, completed *codex.Action
	for _, p := range got {
		if p.Kind != codex.ProgressAction || p.Action.ID != "call_progress" {
			continue
		}
		if p.Action.Done {
			completed = p.Action
		} else if completed == nil {
			started = p.Action
		}
	}
	if started == nil || started.Type != codex.ActionCommand || started.Command != "echo PROGRESS-$((6*7))" {
		t.Errorf("started action = %+v, want the command as the model sent it", started)
	}
	if completed == nil {
		t.Fatalf("no completed action among %+v", got)
	}
	if completed.ExitCode == nil || *completed.ExitCode != 0 || !strings.Contains(completed.Output, "PROGRESS-42") {
		t.Errorf("completed action = %+v, want exit code 0 and the output PROGRESS-42", completed)
	}
}
