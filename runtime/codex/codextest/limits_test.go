package codextest_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestRealCodexReportsUsageLimit proves that UsageLimit's 429 makes the real
// codex fail the turn at once (one model request, no retry) with
// codexErrorInfo "usageLimitExceeded", after an account/rateLimits/updated
// whose primary window is 100% used until the scripted reset.
func TestRealCodexReportsUsageLimit(t *testing.T) {
	m := codextest.NewModel(t)
	reset := time.Now().Add(90 * time.Second).Truncate(time.Second)
	m.Respond(func(codextest.Request) codextest.Reply { return codextest.UsageLimit(reset) })
	s := startRawServer(t, m)
	ctx := testContext(t)
	thread := s.startThread(ctx)
	s.call(ctx, "turn/start", map[string]any{"threadId": thread,
		"input": []any{map[string]any{"type": "text", "text": "hello", "text_elements": []any{}}}})

	type window struct {
		UsedPercent        float64 `json:"usedPercent"`
		WindowDurationMins int64   `json:"windowDurationMins"`
		ResetsAt           int64   `json:"resetsAt"`
	}
	var limits *window
	var errorInfo string
	for {
		msg := s.next(ctx)
		var p struct {
			RateLimits struct {
				Primary *window `json:"primary"`
			} `json:"rateLimits"`
			Turn struct {
				Status string `json:"status"`
				Error  *struct {
					Message        string          `json:"message"`
					CodexErrorInfo json.RawMessage `json:"codexErrorInfo"`
				} `json:"error"`
			} `json:"turn"`
		}
		if msg.Method == "" || json.Unmarshal(msg.Params, &p) != nil {
			continue
		}
		if msg.Method == "account/rateLimits/updated" && p.RateLimits.Primary != nil {
			limits = p.RateLimits.Primary
		}
		if msg.Method != "turn/completed" {
			continue
		}
		if p.Turn.Status != "failed" || p.Turn.Error == nil {
			t.Fatalf("turn status = %q (error %+v), want failed with an error", p.Turn.Status, p.Turn.Error)
		}
		errorInfo = string(p.Turn.Error.CodexErrorInfo)
		if !strings.Contains(p.Turn.Error.Message, "usage limit") {
			t.Errorf("error message = %q, want it to name the usage limit", p.Turn.Error.Message)
		}
		break
	}
	if errorInfo != `"usageLimitExceeded"` {
		t.Errorf("codexErrorInfo = %s, want \"usageLimitExceeded\"", errorInfo)
	}
	want := window{UsedPercent: 100, WindowDurationMins: codextest.UsageLimitWindowMinutes, ResetsAt: reset.Unix()}
	if limits == nil || *limits != want {
		t.Errorf("rate-limit primary window before the failure = %+v, want %+v", limits, want)
	}
	if n := len(m.Requests()); n != 1 {
		t.Errorf("model requests = %d, want 1 (a usage limit is not retried)", n)
	}
}
