package usage

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// countTokens reports a turn's spend by kind. Input counts all input
// tokens, cached ones included; cached is the part of it served from cache.
func (m *Limits) countTokens(platform string, u codex.Usage) {
	if u.Turn.Total == 0 {
		return
	}
	for _, k := range []struct {
		kind string
		n    int64
	}{{"input", u.Turn.Input}, {"cached", u.Turn.CachedInput}, {"output", u.Turn.Output}, {"reasoning", u.Turn.Reasoning}} {
		if k.n > 0 {
			m.obs.Tokens(platform, k.kind, k.n)
		}
	}
}

// storedUsageLines are the /status lines from the usage recorded with the
// lane's last turn; live says codex reported the context itself already.
func (m *Limits) storedUsageLines(ctx context.Context, key string, live bool) string {
	var b strings.Builder
	tu, found, err := m.st.LastTurnUsage(ctx, key)
	if err != nil {
		m.log.Warn("status.usage_failed", zap.String("lane", key), zap.Error(err))
	}
	switch {
	case live:
	case found && tu.Usage.ContextWindow > 0:
		u := tu.Usage
		fmt.Fprintf(&b, "Context: %d / %d tokens (%.0f%%) after the last turn\n", u.ContextTokens, u.ContextWindow,
			float64(u.ContextTokens)*100/float64(u.ContextWindow))
	default:
		b.WriteString("Context: no usage reported yet\n")
	}
	if found {
		u := tu.Usage
		fmt.Fprintf(&b, "Last turn: %d tokens (input %d, of which cached %d; output %d, of which reasoning %d)\n",
			u.TurnTokens, u.InputTokens, u.CachedInputTokens, u.OutputTokens, u.ReasoningTokens)
	}
	return b.String()
}

// rateLimitLines are the /status lines of the account's rate-limit
// windows: read afresh when codex can, else the last reported.
func (m *Limits) rateLimitLines(ctx context.Context) string {
	snap, ok := m.currentRateLimits(ctx)
	var b strings.Builder
	b.WriteString(m.usagePauseStatus())
	if !ok || len(snap.Windows) == 0 {
		return b.String()
	}
	now := m.now()
	parts := make([]string, 0, len(snap.Windows))
	for _, w := range snap.Windows {
		p := fmt.Sprintf("%s %.0f%% used", windowName(w), w.UsedPercent)
		if !w.ResetsAt.IsZero() {
			p += ", resets " + ClockTime(w.ResetsAt, now)
		}
		parts = append(parts, p)
	}
	b.WriteString("Codex limits: " + strings.Join(parts, "; ") + "\n")
	return b.String()
}

func (m *Limits) currentRateLimits(ctx context.Context) (codex.RateLimits, bool) {
	rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	snap, err := m.cx.RateLimits(rctx)
	cancel()
	if err == nil {
		return snap, true
	}
	// An API-key provider has no account limits: expected, not news.
	m.log.Debug("status.rate_limits_unread", zap.Error(err))
	return m.cx.LastRateLimits()
}

// windowName names a window by its length, as ChatGPT plans do.
func windowName(w codex.RateLimitWindow) string {
	switch {
	case w.WindowMinutes == 300:
		return "5h window"
	case w.WindowMinutes == 7*24*60:
		return "weekly window"
	case w.WindowMinutes > 0 && w.WindowMinutes%60 == 0:
		return fmt.Sprintf("%dh window", w.WindowMinutes/60)
	case w.WindowMinutes > 0:
		return fmt.Sprintf("%dm window", w.WindowMinutes)
	}
	return w.Name + " window"
}

// statusLines are the /status lines of the lane's context, its last turn
// and the account's limits.
func (m *Limits) statusLines(ctx context.Context, sl store.Lane, b *strings.Builder) {
	u, live := m.cx.Usage(sl.ThreadID)
	if live = live && sl.ThreadID != ""; live {
		b.WriteString(usageLine(u))
	}
	b.WriteString(m.storedUsageLines(ctx, sl.SessionKey, live))
	m.spendLines(ctx, sl, b)
	b.WriteString(m.rateLimitLines(ctx))
}

// usageLine is the /status line of the context codex reports for the
// lane's loaded thread.
func usageLine(u codex.Usage) string {
	if u.ContextWindow <= 0 {
		return fmt.Sprintf("Context: %d tokens (window unknown); total used %d\n", u.LastTotalTokens, u.TotalTokens)
	}
	pct := float64(u.LastTotalTokens) * 100 / float64(u.ContextWindow)
	return fmt.Sprintf("Context: %d / %d tokens (%.0f%%); total used %d\n", u.LastTotalTokens, u.ContextWindow, pct, u.TotalTokens)
}
