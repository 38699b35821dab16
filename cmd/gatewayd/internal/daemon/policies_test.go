package daemon

import (
	"testing"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/runtime/codex"
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

// Refused server requests reach the gateway once it is bound; before that
// (the app-server starts first) they are only logged by the client.
func TestUnsupportedRequestsRouteLate(t *testing.T) {
	d := &daemon{}
	d.unsupported("t0", "item/tool/call") // unbound: must not panic
	var got []string
	h := codex.UnsupportedHandler(func(thread, method string) { got = append(got, thread+" "+method) })
	d.refused.Store(&h)
	d.unsupported("t1", "item/permissions/requestApproval")
	if len(got) != 1 || got[0] != "t1 item/permissions/requestApproval" {
		t.Errorf("routed %q, want only the request after binding", got)
	}
}
