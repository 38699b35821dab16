package codex

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

func intPtr(n int) *int { return &n }

// TestProgressOf decodes the notifications the work view uses, in the
// shapes of codex 0.169.0 (generate-json-schema and docs/codex-app-server.md §3, §10).
func TestProgressOf(t *testing.T) {
	tests := []struct {
		name   string
		method string
		params string
		want   Progress
		ok     bool
	}{
		{name: "plan", method: "turn/plan/updated",
			params: `{"threadId":"T","turnId":"U","explanation":"why","plan":[{"step":"read","status":"completed"},{"step":"fix","status":"inProgress"},{"step":"test","status":"pending"}]}`,
			want: Progress{Kind: ProgressPlan, Explanation: "why", Plan: []PlanStep{
				{"read", StepCompleted}, {"fix", StepInProgress}, {"test", StepPending}}}, ok: true},
		{name: "malformed plan is ignored", method: "turn/plan/updated",
			params: `{"threadId":"T","turnId":"U","plan":"nope"}`},
		{name: "command started", method: "item/started",
			params: `{"threadId":"T","turnId":"U","item":{"type":"commandExecution","id":"call_1","command":"/bin/bash -lc 'echo hi'","status":"inProgress","commandActions":[{"type":"unknown","command":"echo hi"}],"aggregatedOutput":null,"exitCode":null,"durationMs":null}}`,
			want:   Progress{Kind: ProgressAction, Action: &Action{ID: "call_1", Type: ActionCommand, Status: "inProgress", Command: "echo hi"}}, ok: true},
		{name: "command completed", method: "item/completed",
			params: `{"threadId":"T","turnId":"U","item":{"type":"commandExecution","id":"call_1","command":"/bin/bash -lc 'a | b'","status":"failed","commandActions":[{"command":"a"},{"command":"b"}],"aggregatedOutput":"boom\n","exitCode":2,"durationMs":1500}}`,
			want: Progress{Kind: ProgressAction, Action: &Action{ID: "call_1", Type: ActionCommand, Status: "failed", Done: true,
				Command: "a | b", ExitCode: intPtr(2), Duration: 1500 * time.Millisecond, Output: "boom\n"}}, ok: true},
		{name: "file change counts diff lines", method: "item/completed",
			params: `{"threadId":"T","turnId":"U","item":{"type":"fileChange","id":"call_2","status":"completed","changes":[{"path":"/w/new.txt","kind":{"type":"add"},"diff":"a\nb\n"},{"path":"/w/old.go","kind":{"type":"update","move_path":null},"diff":"--- a/old.go\n+++ b/old.go\n@@ -1,2 +1,2 @@\n-x\n+y\n+z\n ctx\n"}]}}`,
			want: Progress{Kind: ProgressAction, Action: &Action{ID: "call_2", Type: ActionFileEdit, Status: "completed", Done: true,
				Files: []FileChange{{Path: "/w/new.txt", Kind: "add", Added: 2}, {Path: "/w/old.go", Kind: "update", Added: 2, Removed: 1}}}}, ok: true},
		{name: "web search", method: "item/started",
			params: `{"threadId":"T","turnId":"U","item":{"type":"webSearch","id":"ws","query":"","action":{"type":"search","query":"go generics"}}}`,
			want:   Progress{Kind: ProgressAction, Action: &Action{ID: "ws", Type: ActionWebSearch, Query: "go generics"}}, ok: true},
		{name: "mcp tool error", method: "item/completed",
			params: `{"threadId":"T","turnId":"U","item":{"type":"mcpToolCall","id":"m","server":"docs","tool":"lookup","status":"failed","arguments":{},"error":{"message":"no such page"}}}`,
			want: Progress{Kind: ProgressAction, Action: &Action{ID: "m", Type: ActionMCPTool, Status: "failed", Done: true,
				Server: "docs", Tool: "lookup", Error: "no such page"}}, ok: true},
		{name: "reasoning summary", method: "item/completed",
			params: `{"threadId":"T","turnId":"U","item":{"type":"reasoning","id":"r","summary":["Looking at the tests"],"content":[]}}`,
			want:   Progress{Kind: ProgressReasoning, Text: "Looking at the tests"}, ok: true},
		{name: "reasoning without summary", method: "item/completed",
			params: `{"threadId":"T","turnId":"U","item":{"type":"reasoning","id":"r","summary":[],"content":[]}}`},
		{name: "agent message is not an action", method: "item/completed",
			params: `{"threadId":"T","turnId":"U","item":{"type":"agentMessage","id":"a","text":"hi"}}`},
		{name: "retry notice", method: "error",
			params: `{"threadId":"T","turnId":"U","willRetry":true,"error":{"message":"Reconnecting... 2/5","codexErrorInfo":null}}`,
			want:   Progress{Kind: ProgressRetry, Text: "Reconnecting... 2/5"}, ok: true},
		{name: "reroute", method: "model/rerouted",
			params: `{"threadId":"T","turnId":"U","fromModel":"gpt-5.3-codex","toModel":"gpt-5.2","reason":"highRiskCyberActivity"}`,
			want:   Progress{Kind: ProgressReroute, Reroute: &Reroute{From: "gpt-5.3-codex", To: "gpt-5.2", Reason: "highRiskCyberActivity"}}, ok: true},
		{name: "reroute to no model is ignored", method: "model/rerouted",
			params: `{"threadId":"T","turnId":"U","fromModel":"a","toModel":"","reason":"x"}`},
		{name: "guardian warning", method: "guardianWarning",
			params: `{"threadId":"T","message":" Automatic approval review denied the requested action. "}`,
			want:   Progress{Kind: ProgressGuardian, Text: "Automatic approval review denied the requested action."}, ok: true},
		{name: "empty guardian warning is ignored", method: "guardianWarning", params: `{"threadId":"T","message":""}`},
		{name: "final error is not progress", method: "error",
			params: `{"threadId":"T","turnId":"U","willRetry":false,"error":{"message":"failed"}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e turnEvent
			if err := json.Unmarshal([]byte(tc.params), &e); err != nil {
				t.Fatalf("the notification itself must stay decodable: %v", err)
			}
			got, ok := progressOf(tc.method, &e)
			if ok != tc.ok || !reflect.DeepEqual(got, tc.want) {
				t.Errorf("progressOf = %+v (action %+v), %v; want %+v (action %+v), %v", got, got.Action, ok, tc.want, tc.want.Action, tc.ok)
			}
		})
	}
}

func TestUnwrapShell(t *testing.T) {
	tests := []struct{ in, want string }{
		{"/bin/bash -lc 'echo hi'", "echo hi"},
		{`/bin/bash -lc 'echo '\''q'\'''`, "echo 'q'"},
		{"ls -la", "ls -la"},
		{"/bin/bash -lc unquoted", "/bin/bash -lc unquoted"},
	}
	for _, tc := range tests {
		if got := unwrapShell(tc.in); got != tc.want {
			t.Errorf("unwrapShell(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
