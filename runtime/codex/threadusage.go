package codex

import (
	"context"
	"fmt"
)

// ThreadCost is codex's own estimate of what a thread has used
// (account/usage/read with a threadId, its threadUsage): only a ChatGPT
// account's billing route knows it. USDMicros is -1 when codex did not say.
type ThreadCost struct {
	ThreadID     string
	CreditMicros int64
	USDMicros    int64
	Tokens       int64 // the sum of the breakdown groups' totalTokens
}

// ThreadUsage reads codex's usage estimate of threadID
// (account/usage/read). False when codex answered without one (no billing
// route for the thread); an error when codex refused, as it does without a
// ChatGPT account (an API-key provider, the tests' fake model).
func (c *Client) ThreadUsage(ctx context.Context, threadID string) (ThreadCost, bool, error) {
	var out struct {
		ThreadUsage *struct {
			ThreadID         string `json:"threadId"`
			EstimatedCredits int64  `json:"estimatedUsageCreditsMicros"`
			EstimatedUSD     *int64 `json:"estimatedUsageUsdMicros"`
			Groups           []struct {
				TotalTokens *int64 `json:"totalTokens"`
			} `json:"groups"`
		} `json:"threadUsage"`
	}
	cctx, cancel := context.WithTimeout(ctx, c.opts.StartTimeout)
	defer cancel()
	if _, err := c.callLive(cctx, "account/usage/read", map[string]any{"threadId": threadID}, &out); err != nil {
		return ThreadCost{}, false, fmt.Errorf("codex: read thread usage: %w", err)
	}
	tu := out.ThreadUsage
	if tu == nil {
		return ThreadCost{}, false, nil
	}
	cost := ThreadCost{ThreadID: tu.ThreadID, CreditMicros: tu.EstimatedCredits, USDMicros: -1}
	if tu.EstimatedUSD != nil {
		cost.USDMicros = *tu.EstimatedUSD
	}
	for _, g := range tu.Groups {
		if g.TotalTokens != nil {
			cost.Tokens += *g.TotalTokens
		}
	}
	return cost, true, nil
}
