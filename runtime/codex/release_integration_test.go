package codex_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// Release unloads the thread from the real app-server, so the next resume
// reads the rollout on disk: a rollout replaced meanwhile (a cluster node
// restoring the copy another node shipped) is what the next turn's model
// request carries, not the history the app-server held in memory. Without
// UnloadArgs codex kept the unsubscribed thread loaded and the resume
// rejoined it, second turn and all; resumed straight after the
// unsubscribe's answer, it was refused as "closing".
func TestIntegrationReleaseUnloadsSoResumeReadsTheRolloutOnDisk(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the real app-server")
	}
	ctx := integrationContext(t)
	m := codextest.NewModel(t)
	home := codextest.Home(t)
	c := startClient(t, m, home)

	thread := ensure(t, ctx, c, "", codex.OutcomeStarted).ThreadID
	turn := func(text string) {
		t.Helper()
		if _, err := c.RunTurn(ctx, thread, codex.TurnInput{Text: text}, codex.TurnEvents{}); err != nil {
			t.Fatalf("RunTurn(%q): %v", text, err)
		}
	}
	turn("FIRST-TURN")
	matches, err := filepath.Glob(filepath.Join(home, "sessions", "*", "*", "*", "rollout-*-"+thread+".jsonl"))
	if err != nil || len(matches) != 1 {
		t.Fatalf("rollout of %s: %v, %v", thread, matches, err)
	}
	afterFirst, err := os.ReadFile(matches[0])
	if err != nil {
		t.Fatal(err)
	}
	turn("SECOND-TURN")

	if err := c.Release(ctx, thread); err != nil {
		t.Fatalf("Release: %v", err)
	}
	if err := os.WriteFile(matches[0], afterFirst, 0o600); err != nil {
		t.Fatal(err)
	}
	ensure(t, ctx, c, thread, codex.OutcomeResumed)
	turn("THIRD-TURN")
	req, ok := m.LastRequestWith("THIRD-TURN")
	if !ok {
		t.Fatal("no model request for the third turn")
	}
	in := req.InputText()
	if !strings.Contains(in, "FIRST-TURN") || strings.Contains(in, "SECOND-TURN") {
		t.Errorf("third turn's request: first turn present %v (want true), second turn present %v (want false: it is not in the rollout on disk)",
			strings.Contains(in, "FIRST-TURN"), strings.Contains(in, "SECOND-TURN"))
	}
}
