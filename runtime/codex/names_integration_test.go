package codex_test

import (
	"context"
	"errors"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestIntegrationThreadName: thread/name/set names a thread, and the real
// app-server answers with thread/name/updated to this client, the same
// name set again too (a client must tell its own echoes apart); an empty
// name is refused.
func TestIntegrationThreadName(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	c := startClient(t, m, codextest.Home(t))
	names := make(chan codex.ThreadName, 16)
	c.OnThreadName(func(u codex.ThreadName) { names <- u })
	th := ensure(t, ctx, c, "", codex.OutcomeStarted)

	for _, name := range []string{"Release planning", "Release planning", "Ship it"} {
		if err := c.SetThreadName(ctx, th.ThreadID, name); err != nil {
			t.Fatalf("SetThreadName(%q): %v", name, err)
		}
		if got := waitName(t, ctx, names); got != (codex.ThreadName{ThreadID: th.ThreadID, Name: name}) {
			t.Errorf("after SetThreadName(%q) heard %+v", name, got)
		}
	}
	var rpc *codex.RPCError
	if err := c.SetThreadName(ctx, th.ThreadID, ""); !errors.As(err, &rpc) {
		t.Errorf("SetThreadName(\"\") = %v, want codex's refusal", err)
	}
}

func waitName(t *testing.T, ctx context.Context, names <-chan codex.ThreadName) codex.ThreadName {
	t.Helper()
	select {
	case u := <-names:
		return u
	case <-ctx.Done():
		t.Fatalf("waiting for thread/name/updated: %v", ctx.Err())
		return codex.ThreadName{}
	}
}
