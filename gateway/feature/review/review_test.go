package review

import (
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		name, args string
		want       codex.ReviewTarget
		ok         bool
	}{
		{"uncommitted", "", codex.ReviewTarget{Kind: codex.ReviewUncommitted}, true},
		{"base branch", "base main", codex.ReviewTarget{Kind: codex.ReviewBaseBranch, Branch: "main"}, true},
		{"commit, any case", "COMMIT abc123", codex.ReviewTarget{Kind: codex.ReviewCommit, SHA: "abc123"}, true},
		{"base without a branch", "base", codex.ReviewTarget{}, false},
		{"unknown word", "everything please", codex.ReviewTarget{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseTarget(tt.args)
			if got != tt.want || ok != tt.ok {
				t.Errorf("parseTarget(%q) = %+v, %v; want %+v, %v", tt.args, got, ok, tt.want, tt.ok)
			}
		})
	}
}
