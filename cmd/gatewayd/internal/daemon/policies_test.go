package daemon

import (
	"testing"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway"
)

// The gateway answers chat approvals, so buildGateway routes them to it.
var _ approvalRouter = (*gateway.Gateway)(nil)

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
