package daemon

import (
	"testing"

	"github.com/gatewayd/gatewayd/config"
)

func TestThreadApprovalPolicyFollowsConfig(t *testing.T) {
	tests := []struct{ name, approvals, want string }{
		{"never", "never", "never"},
		{"chat asks for anything not known safe", "chat", "untrusted"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := &daemon{cfg: &config.Config{Codex: config.Codex{Approvals: tc.approvals, Sandbox: "workspace-write"}}}
			if got := d.threadConfig(); got.ApprovalPolicy != tc.want || got.Sandbox != "workspace-write" {
				t.Errorf("threadConfig() = %+v, want approval policy %q", got, tc.want)
			}
		})
	}
}
