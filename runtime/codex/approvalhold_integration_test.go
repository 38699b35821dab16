package codex_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// An approval accepted at once does not let the command out of the lane's
// profile. With approval policy "untrusted" and the read-only sandbox
// mode, codex 0.169 silently reran an accepted command without the
// sandbox when the sandbox stopped it and the accept came within about
// 0.2 s of the request (docs/codex-app-server.md §10.4). Under the lane
// profile (codex.isolation: lanes, approvals in chat) it does not: the
// command runs confined, fails, and nothing is written outside the lane's
// roots. This pins that, for the next codex.
func TestIntegrationAQuickAcceptStaysInTheSandbox(t *testing.T) {
	ctx := integrationContext(t)
	w := newIsoWorld(t)
	m := probeModel(t)
	// A directory the profile lets lanes read and not write (as it does a
	// project's objects): the sandbox refuses the write (read-only file
	// system), the daemon's user could make it.
	readOnly := t.TempDir()
	escape := filepath.Join(readOnly, "escaped.txt")
	var asked atomic.Int32
	c := startClient(t, m, w.home, func(o *codex.Options) {
		o.Args = append(codextest.SandboxArgs(m.URL), codex.IsolationArgs(codex.CodexDir(codextest.CodexBinary(t)), true, w.denied(), []string{readOnly})...)
		o.Approvals = func(context.Context, codex.ApprovalRequest) codex.Decision {
			asked.Add(1)
			return codex.DecisionAccept
		}
	})
	cfg := w.confine("B")
	cfg.ApprovalPolicy = "untrusted"
	th, err := c.EnsureThread(ctx, "", cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		res, err := c.RunTurn(ctx, th.ThreadID, codex.TurnInput{Text: "PROBE\ntouch " + escape, Confine: cfg.Confine}, codex.TurnEvents{})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(res.Text, "Read-only file system") {
			t.Errorf("run %d: the command did not meet the sandbox: %q", i, res.Text)
		}
		if _, err := os.Stat(escape); err == nil {
			t.Fatalf("run %d: the accepted command wrote %s, outside the lane's roots", i, escape)
		}
	}
	if asked.Load() == 0 {
		t.Fatal("codex asked for no approval: the probe proves nothing")
	}
}
