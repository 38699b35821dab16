package codex_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestIntegrationDynamicToolCall registers send_file on thread/start and
// serves the model's call: the handler gets the arguments, the model the
// handler's text as the tool output, refusals (success false) included.
func TestIntegrationDynamicToolCall(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	m.Respond(func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp && strings.HasPrefix(req.LastUserText(), "send ") {
			return codextest.Reply{ToolCall: codextest.SendFile("call_send", strings.TrimPrefix(req.LastUserText(), "send "), "a caption")}
		}
		return codextest.DefaultReply(req)
	})
	var mu sync.Mutex
	var calls []codex.ToolCall
	c := startClient(t, m, codextest.Home(t), func(o *codex.Options) {
		o.ToolCall = func(_ context.Context, call codex.ToolCall) codex.ToolResult {
			mu.Lock()
			calls = append(calls, call)
			mu.Unlock()
			var args struct{ Path string }
			_ = json.Unmarshal(call.Arguments, &args)
			if args.Path == "bad.txt" {
				return codex.ToolResult{Text: "refused: outside the project directory", Success: false}
			}
			return codex.ToolResult{Text: "sent " + args.Path, Success: true}
		}
	})
	tool := codex.DynamicTool{Name: "send_file", Description: "Send a file to the user.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"},"caption":{"type":"string"}},"required":["path"]}`)}
	th, err := c.EnsureThread(ctx, "", codex.ThreadConfig{DynamicTools: []codex.DynamicTool{tool}})
	if err != nil {
		t.Fatalf("EnsureThread: %v", err)
	}
	for _, tt := range []struct {
		name, path, wantOutput string
	}{
		{name: "served", path: "report.txt", wantOutput: "sent report.txt"},
		{name: "refused", path: "bad.txt", wantOutput: "refused: outside the project directory"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before := len(m.RequestsForThread(th.ThreadID))
			res, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "send " + tt.path}, codex.TurnEvents{})
			if err != nil || res.Status != codex.TurnCompleted {
				t.Fatalf("RunTurn: %v, status %q (%+v)", err, res.Status, res.Error)
			}
			reqs := m.RequestsForThread(th.ThreadID)[before:]
			if len(reqs) < 2 {
				t.Fatalf("model requests = %d, want the call and its follow-up", len(reqs))
			}
			if names := reqs[0].ToolNames(); !slices.Contains(names, "send_file") {
				t.Errorf("model tools = %v, want send_file among them", names)
			}
			out, ok := reqs[1].ToolOutput()
			if !ok || !strings.Contains(out, tt.wantOutput) {
				t.Errorf("tool output the model saw = %q (%v), want it to contain %q", out, ok, tt.wantOutput)
			}
			mu.Lock()
			defer mu.Unlock()
			last := calls[len(calls)-1]
			if last.Tool != "send_file" || last.ThreadID != th.ThreadID || last.CallID != "call_send" ||
				!strings.Contains(string(last.Arguments), tt.path) {
				t.Errorf("tool call = %+v", last)
			}
		})
	}
}

// TestIntegrationDynamicToolSurvivesKillAndResume: thread/resume takes no
// dynamicTools, yet a thread started with send_file keeps it after its
// app-server was SIGKILLed and another client resumed it (docs/codex-app-server.md §11).
func TestIntegrationDynamicToolSurvivesKillAndResume(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	m.Respond(func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp && strings.HasPrefix(req.LastUserText(), "send ") {
			return codextest.Reply{ToolCall: codextest.SendFile("call_resumed", "after.txt", "")}
		}
		return codextest.DefaultReply(req)
	})
	home := codextest.Home(t)
	serve := func(o *codex.Options) {
		o.ToolCall = func(_ context.Context, call codex.ToolCall) codex.ToolResult {
			return codex.ToolResult{Text: "served " + call.Tool, Success: true}
		}
	}
	a := startClient(t, m, home, serve)
	tool := codex.DynamicTool{Name: "send_file", Description: "Send a file to the user.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`)}
	th, err := a.EnsureThread(ctx, "", codex.ThreadConfig{DynamicTools: []codex.DynamicTool{tool}})
	if err != nil {
		t.Fatalf("EnsureThread: %v", err)
	}
	completedTurn(t, ctx, a, th.ThreadID, "hello")
	if n := killCodexGroups(t, home); n != 1 {
		t.Fatalf("killed %d app-server process groups, want exactly 1", n)
	}
	closeClient(t, a)
	waitNoCodex(t, ctx, home)

	b := startClient(t, m, home, serve)
	resumed := ensure(t, ctx, b, th.ThreadID, codex.OutcomeResumed)
	res, err := b.RunTurn(ctx, resumed.ThreadID, codex.TurnInput{Text: "send after.txt"}, codex.TurnEvents{})
	if err != nil || res.Status != codex.TurnCompleted {
		t.Fatalf("RunTurn after resume: %v, status %q (%+v)", err, res.Status, res.Error)
	}
	if out, ok := lastRequest(t, m, resumed.ThreadID).ToolOutput(); !ok || !strings.Contains(out, "served send_file") {
		t.Errorf("tool output after resume = %q (%v), want the handler's answer", out, ok)
	}
}
