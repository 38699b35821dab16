package codex

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"
)

// TokenCounts is one breakdown of thread/tokenUsage/updated.
type TokenCounts struct {
	Total, Input, CachedInput, Output, Reasoning int64
}

func (w wireTokenCounts) counts() TokenCounts {
	return TokenCounts{Total: w.TotalTokens, Input: w.InputTokens, CachedInput: w.CachedInputTokens,
		Output: w.OutputTokens, Reasoning: w.ReasoningOutputTokens}
}

// minus is what was spent between before and c (both thread totals);
// never negative, so a thread whose totals restart (a replaced thread)
// reports its new totals rather than a negative spend.
func (c TokenCounts) minus(before TokenCounts) TokenCounts {
	if c.Total < before.Total {
		return c
	}
	return TokenCounts{Total: c.Total - before.Total, Input: c.Input - before.Input,
		CachedInput: c.CachedInput - before.CachedInput, Output: c.Output - before.Output,
		Reasoning: c.Reasoning - before.Reasoning}
}

// Totals is the thread's running totals as a TokenCounts.
func (u Usage) Totals() TokenCounts {
	return TokenCounts{Total: u.TotalTokens, Input: u.InputTokens, CachedInput: u.CachedInputTokens,
		Output: u.OutputTokens, Reasoning: u.ReasoningOutputTokens}
}

// turnSpend is what one turn spent: codex reports only running totals (and
// re-sends the previous totals when a turn starts), so a turn's own tokens
// are its end totals minus the thread's totals before it began.
func turnSpend(before, after Usage, hadBefore bool) TokenCounts {
	if !hadBefore {
		return after.Totals()
	}
	return after.Totals().minus(before.Totals())
}

// codexErrorInfo values the gateway branches on (ErrorNotification.json,
// CodexErrorInfo). Object-shaped infos ({"httpConnectionFailed":{...}})
// are named by their single key.
const (
	InfoUsageLimitExceeded    = "usageLimitExceeded"
	InfoRateLimitExceeded     = "rateLimitExceeded"
	InfoUnauthorized          = "unauthorized"
	InfoContextWindowExceeded = "contextWindowExceeded"
	InfoServerOverloaded      = "serverOverloaded"
)

// errorKind names a codexErrorInfo: the string itself, or the key of the
// object form; "" when absent or unreadable.
func errorKind(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) == nil && len(obj) == 1 {
		for k := range obj {
			return k
		}
	}
	return ""
}

// IsUsageLimit reports whether the turn failed because the account's usage
// limit is reached (codexErrorInfo usageLimitExceeded): retrying before
// the limit resets fails the same way.
func (e *TurnError) IsUsageLimit() bool { return e != nil && e.Kind == InfoUsageLimitExceeded }

// IsUnauthorized reports a turn refused for missing or bad credentials.
func (e *TurnError) IsUnauthorized() bool { return e != nil && e.Kind == InfoUnauthorized }

// IsContextWindowExceeded reports a turn whose input no longer fits the
// model's context window.
func (e *TurnError) IsContextWindowExceeded() bool {
	return e != nil && e.Kind == InfoContextWindowExceeded
}

// RateLimitWindow is one rate-limit window of the account.
type RateLimitWindow struct {
	Name          string // "primary" or "secondary"
	UsedPercent   float64
	WindowMinutes int64     // 0 when unknown
	ResetsAt      time.Time // zero when unknown
}

// RateLimits is the account's rate-limit snapshot (RateLimitSnapshot).
type RateLimits struct {
	LimitID     string
	Windows     []RateLimitWindow // primary first; only the windows known
	ReachedType string            // rateLimitReachedType, "" when not reported
}

// Window returns the named window.
func (r RateLimits) Window(name string) (RateLimitWindow, bool) {
	for _, w := range r.Windows {
		if w.Name == name {
			return w, true
		}
	}
	return RateLimitWindow{}, false
}

// ReachedUntil reports whether a window is used up at now, and when the
// last such window resets (the time work can go on).
func (r RateLimits) ReachedUntil(now time.Time) (time.Time, bool) {
	var until time.Time
	for _, w := range r.Windows {
		if w.UsedPercent >= 100 && w.ResetsAt.After(now) && w.ResetsAt.After(until) {
			until = w.ResetsAt
		}
	}
	return until, !until.IsZero()
}

// RateLimitsHandler hears account/rateLimits/updated, merged into the last
// snapshot. It runs on the stdout reader: it must not block.
type RateLimitsHandler func(RateLimits)

type wireWindow struct {
	UsedPercent        float64 `json:"usedPercent"`
	WindowDurationMins *int64  `json:"windowDurationMins"`
	ResetsAt           *int64  `json:"resetsAt"`
}

func (w *wireWindow) window(name string) RateLimitWindow {
	out := RateLimitWindow{Name: name, UsedPercent: w.UsedPercent}
	if w.WindowDurationMins != nil {
		out.WindowMinutes = *w.WindowDurationMins
	}
	if w.ResetsAt != nil && *w.ResetsAt > 0 {
		out.ResetsAt = time.Unix(*w.ResetsAt, 0)
	}
	return out
}

type wireRateLimits struct {
	LimitID              *string     `json:"limitId"`
	Primary              *wireWindow `json:"primary"`
	Secondary            *wireWindow `json:"secondary"`
	RateLimitReachedType *string     `json:"rateLimitReachedType"`
}

// mergeInto applies a (possibly sparse) snapshot to prev: the schema says a
// null value in a rolling update does not clear what was seen before.
func (w *wireRateLimits) mergeInto(prev RateLimits) RateLimits {
	out := RateLimits{LimitID: prev.LimitID, ReachedType: prev.ReachedType}
	if w.LimitID != nil {
		out.LimitID = *w.LimitID
	}
	if w.RateLimitReachedType != nil {
		out.ReachedType = *w.RateLimitReachedType
	}
	for _, named := range []struct {
		name string
		w    *wireWindow
	}{{"primary", w.Primary}, {"secondary", w.Secondary}} {
		if named.w != nil {
			out.Windows = append(out.Windows, named.w.window(named.name))
		} else if old, ok := prev.Window(named.name); ok {
			out.Windows = append(out.Windows, old)
		}
	}
	return out
}

// rateLimitBook keeps the last rate-limit snapshot; its zero value is ready.
type rateLimitBook struct {
	mu    sync.Mutex
	last  RateLimits
	known bool
}

func (b *rateLimitBook) merge(w *wireRateLimits) RateLimits {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last, b.known = w.mergeInto(b.last), true
	return b.last
}

func (b *rateLimitBook) get() (RateLimits, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.last, b.known
}

// LastRateLimits is the account's rate-limit snapshot as last reported by
// account/rateLimits/updated or read by RateLimits; false before any.
func (c *Client) LastRateLimits() (RateLimits, bool) { return c.limits.get() }

// RateLimits reads the account's rate limits (account/rateLimits/read).
// codex refuses it without a ChatGPT account ("codex account
// authentication required"), e.g. with an API-key provider.
func (c *Client) RateLimits(ctx context.Context) (RateLimits, error) {
	var out struct {
		RateLimits wireRateLimits `json:"rateLimits"`
	}
	cctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	if _, err := c.callLive(cctx, "account/rateLimits/read", nil, &out); err != nil {
		return RateLimits{}, fmt.Errorf("codex: read rate limits: %w", err)
	}
	return c.limits.merge(&out.RateLimits), nil
}

// routeRateLimits handles account/rateLimits/updated, which names no thread;
// it reports whether method was it.
func (c *Client) routeRateLimits(method string, params json.RawMessage) bool {
	if method != "account/rateLimits/updated" {
		return false
	}
	var p struct {
		RateLimits *wireRateLimits `json:"rateLimits"`
	}
	if err := json.Unmarshal(params, &p); err != nil || p.RateLimits == nil {
		c.log.Warn("codex.rate_limits_unreadable", zap.Error(err))
		return true
	}
	snap := c.limits.merge(p.RateLimits)
	if c.opts.RateLimitsUpdated != nil {
		c.opts.RateLimitsUpdated(snap)
	}
	return true
}
