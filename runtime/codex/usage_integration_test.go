package codex_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestIntegrationTurnUsage runs two turns, the second with a tool call (two
// model requests), and checks that each TurnResult carries that turn's own
// spend, the last request's breakdown and the thread totals.
func TestIntegrationTurnUsage(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	first := codextest.Usage{InputTokens: 1000, CachedInputTokens: 200, OutputTokens: 50, ReasoningTokens: 10}
	toolReq := codextest.Usage{InputTokens: 2000, CachedInputTokens: 900, OutputTokens: 30, ReasoningTokens: 5}
	answer := codextest.Usage{InputTokens: 2100, CachedInputTokens: 2000, OutputTokens: 70, ReasoningTokens: 20}
	m.Respond(func(req codextest.Request) codextest.Reply {
		if !strings.Contains(req.LastUserText(), "TOOL") {
			return codextest.Reply{Text: "ECHO: " + req.LastUserText(), Usage: first}
		}
		if _, ok := req.ToolOutput(); !ok {
			return codextest.Reply{ToolCall: codextest.ExecCommand("call_usage", "echo hi"), Usage: toolReq}
		}
		return codextest.Reply{Text: "done", Usage: answer}
	})
	c := startClient(t, m, codextest.Home(t))
	th := ensure(t, ctx, c, "", codex.OutcomeStarted)

	res1 := completedTurn(t, ctx, c, th.ThreadID, "hello")
	want1 := codex.TokenCounts{Total: 1050, Input: 1000, CachedInput: 200, Output: 50, Reasoning: 10}
	if res1.Usage.Turn != want1 || res1.Usage.Last != want1 {
		t.Errorf("first turn: turn %+v last %+v, want both %+v", res1.Usage.Turn, res1.Usage.Last, want1)
	}

	res2, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "TOOL please"}, codex.TurnEvents{})
	if err != nil || res2.Status != codex.TurnCompleted {
		t.Fatalf("tool turn: %v, status %q error %+v", err, res2.Status, res2.Error)
	}
	wantTurn := codex.TokenCounts{Total: 2030 + 2170, Input: 4100, CachedInput: 2900, Output: 100, Reasoning: 25}
	wantLast := codex.TokenCounts{Total: 2170, Input: 2100, CachedInput: 2000, Output: 70, Reasoning: 20}
	if res2.Usage.Turn != wantTurn {
		t.Errorf("tool turn spend = %+v, want both requests %+v (not the thread's totals)", res2.Usage.Turn, wantTurn)
	}
	if res2.Usage.Last != wantLast || res2.Usage.LastTotalTokens != wantLast.Total {
		t.Errorf("tool turn last = %+v (LastTotalTokens %d), want %+v", res2.Usage.Last, res2.Usage.LastTotalTokens, wantLast)
	}
	if got, want := res2.Usage.TotalTokens, want1.Total+wantTurn.Total; got != want {
		t.Errorf("thread total = %d, want %d", got, want)
	}
	if res2.Usage.ContextWindow <= 0 {
		t.Errorf("context window = %d, want the model's", res2.Usage.ContextWindow)
	}
}

// TestIntegrationUsageLimitTurn: the usage-limit 429 fails the turn with a
// classified error, and the rate-limit window codex reported before it is
// kept by the client and handed to Options.RateLimitsUpdated.
func TestIntegrationUsageLimitTurn(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	reset := time.Now().Add(time.Hour).Truncate(time.Second)
	m.Respond(func(req codextest.Request) codextest.Reply {
		if strings.Contains(req.LastUserText(), "LIMIT") {
			return codextest.UsageLimit(reset)
		}
		return codextest.DefaultReply(req)
	})
	var mu sync.Mutex
	var heard []codex.RateLimits
	c := startClient(t, m, codextest.Home(t), func(o *codex.Options) {
		o.RateLimitsUpdated = func(r codex.RateLimits) {
			mu.Lock()
			heard = append(heard, r)
			mu.Unlock()
		}
	})
	th := ensure(t, ctx, c, "", codex.OutcomeStarted)
	res, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "LIMIT now"}, codex.TurnEvents{})
	if err != nil {
		t.Fatalf("RunTurn: %v", err)
	}
	if res.Status != codex.TurnFailed || !res.Error.IsUsageLimit() {
		t.Fatalf("status %q error %+v, want failed with a usage-limit error", res.Status, res.Error)
	}
	if res.Error.IsUnauthorized() || res.Error.IsContextWindowExceeded() {
		t.Errorf("error %+v classified as more than a usage limit", res.Error)
	}
	snap, ok := c.LastRateLimits()
	primary, found := snap.Window("primary")
	if !ok || !found || primary.UsedPercent != 100 || !primary.ResetsAt.Equal(reset) ||
		primary.WindowMinutes != codextest.UsageLimitWindowMinutes {
		t.Fatalf("last rate limits = %+v (known %v), want primary 100%% until %v", snap, ok, reset)
	}
	if until, reached := snap.ReachedUntil(time.Now()); !reached || !until.Equal(reset) {
		t.Errorf("ReachedUntil = %v, %v; want %v, true", until, reached, reset)
	}
	mu.Lock()
	n := len(heard)
	mu.Unlock()
	if n == 0 {
		t.Error("Options.RateLimitsUpdated was never called")
	}
	// A custom provider has no ChatGPT account to read limits for.
	if _, err := c.RateLimits(ctx); err == nil || !strings.Contains(err.Error(), "authentication") {
		t.Errorf("RateLimits with an API-key provider = %v, want codex's authentication error", err)
	}
	completedTurn(t, ctx, c, th.ThreadID, "after the limit") // the thread survives the failure
}
