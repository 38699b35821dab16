package webconsole

import (
	"time"

	"github.com/gatewayd/gatewayd/store"
)

// UsageView is what a lane's turns spent in the UTC day and month holding
// At, summed from the usage codex reported with each committed turn (the
// store's records: codex has no per-day figures for a thread).
type UsageView struct {
	At         time.Time  `json:"at"`
	DayStart   time.Time  `json:"day_start"`
	MonthStart time.Time  `json:"month_start"`
	Today      TotalsView `json:"today"`
	Month      TotalsView `json:"month"`
}

// TotalsView is one period's sums.
type TotalsView struct {
	Turns             int64 `json:"turns"`
	Tokens            int64 `json:"tokens"`
	InputTokens       int64 `json:"input_tokens"`
	CachedInputTokens int64 `json:"cached_input_tokens"`
	OutputTokens      int64 `json:"output_tokens"`
	ReasoningTokens   int64 `json:"reasoning_tokens"`
}

// ViewUsage is p, the periods holding at (UTC), as the console and the
// sessions command show it.
func ViewUsage(p store.UsagePeriods, at time.Time) *UsageView {
	return &UsageView{At: at.UTC(), DayStart: store.DayStart(at, nil), MonthStart: store.MonthStart(at, nil),
		Today: viewTotals(p.Day), Month: viewTotals(p.Month)}
}

func viewTotals(u store.UsageTotals) TotalsView {
	return TotalsView{Turns: u.Turns, Tokens: u.Tokens, InputTokens: u.Input, CachedInputTokens: u.CachedInput,
		OutputTokens: u.Output, ReasoningTokens: u.Reasoning}
}
