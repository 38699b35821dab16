package codex_test

import (
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestIntegrationThreadUsageWithoutAccount asks the real app-server for a
// thread's usage estimate (account/usage/read with a threadId) under the
// tests' API-key provider: codex has no billing route to ask, so the
// gateway's own per-turn records must be the source.
func TestIntegrationThreadUsageWithoutAccount(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real app-server")
	}
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	c := startClient(t, m, codextest.Home(t))
	th := ensure(t, ctx, c, "", codex.OutcomeStarted)
	completedTurn(t, ctx, c, th.ThreadID, "hello")
	cost, ok, err := c.ThreadUsage(ctx, th.ThreadID)
	if err == nil || !strings.Contains(err.Error(), "authentication") {
		t.Fatalf("ThreadUsage with an API-key provider = %+v, %v, %v; want codex's authentication error", cost, ok, err)
	}
	if ok {
		t.Errorf("ThreadUsage reported an estimate (%+v) along with an error", cost)
	}
}
