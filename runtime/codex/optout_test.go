package codex_test

import (
	"fmt"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestIntegrationUnreadNotificationsOptedOut: the real app-server, told at
// initialize which notifications nothing reads, does not send them, so a
// turn costs gatewayd fewer stdout lines and wake-ups. The reader logs each
// one it drops by method (codex.notification at debug); without the opt-out
// a turn brings thread/status/changed and thread/readState/changed.
func TestIntegrationUnreadNotificationsOptedOut(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	core, logs := observer.New(zapcore.DebugLevel)
	c := startClient(t, m, codextest.Home(t), func(o *codex.Options) { o.Logger = zap.New(core) })

	th := ensure(t, ctx, c, "", codex.OutcomeStarted)
	completedTurn(t, ctx, c, th.ThreadID, "hello")
	completedTurn(t, ctx, c, th.ThreadID, "again")

	optedOut := map[string]bool{
		"thread/status/changed": true, "thread/readState/changed": true,
		"warning": true, "remoteControl/status/changed": true,
	}
	for _, e := range logs.FilterMessage("codex.notification").All() {
		if method := fmt.Sprint(e.ContextMap()["method"]); optedOut[method] {
			t.Errorf("the app-server sent %s although it was opted out", method)
		}
	}
}
