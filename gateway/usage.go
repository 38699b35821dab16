package gateway

import (
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// usageRecord is what the store keeps of a turn's usage.
func usageRecord(u codex.Usage) store.UsageRecord {
	return store.UsageRecord{TotalTokens: u.TotalTokens, ContextWindow: u.ContextWindow,
		TurnTokens: u.Turn.Total, InputTokens: u.Turn.Input, CachedInputTokens: u.Turn.CachedInput,
		OutputTokens: u.Turn.Output, ReasoningTokens: u.Turn.Reasoning, ContextTokens: u.LastTotalTokens}
}
