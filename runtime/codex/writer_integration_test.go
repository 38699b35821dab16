package codex_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestIntegrationWriterLetGoByRelease: while process A has a thread
// loaded, process B (the CLI, the Desktop app: another client on the same
// CODEX_HOME) is refused it with ErrStaleWriter, yet can fork it, and the
// fork carries its history; once A releases it (thread/unsubscribe, the
// thread unloaded at once), B resumes and writes to it, and A is refused in
// turn.
func TestIntegrationWriterLetGoByRelease(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	home := codextest.Home(t)

	a := startClient(t, m, home)
	th := ensure(t, ctx, a, "", codex.OutcomeStarted)
	completedTurn(t, ctx, a, th.ThreadID, secretPrompt)

	b := startClient(t, m, home)
	if _, err := b.EnsureThread(ctx, th.ThreadID, codex.ThreadConfig{}); !errors.Is(err, codex.ErrStaleWriter) {
		t.Fatalf("EnsureThread while A writes the thread: %v; want ErrStaleWriter", err)
	}
	fork, err := b.ForkThread(ctx, th.ThreadID, codex.ForkConfig{})
	if err != nil {
		t.Fatalf("ForkThread of a thread another process writes: %v", err)
	}
	completedTurn(t, ctx, b, fork, "on the fork")
	if !strings.Contains(lastRequest(t, m, fork).InputText(), "BANANA-42") {
		t.Error("the fork of a held thread lacks its history")
	}

	if err := a.Release(ctx, th.ThreadID); err != nil {
		t.Fatalf("Release: %v", err)
	}
	ensure(t, ctx, b, th.ThreadID, codex.OutcomeResumed)
	completedTurn(t, ctx, b, th.ThreadID, "written by B")
	if _, err := a.EnsureThread(ctx, th.ThreadID, codex.ThreadConfig{}); !errors.Is(err, codex.ErrStaleWriter) {
		t.Errorf("A resuming the thread B now writes: %v; want ErrStaleWriter", err)
	}
}
