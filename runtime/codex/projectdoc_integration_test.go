package codex_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// With the lanes isolated codex's own AGENTS.md discovery is off and the
// daemon sends the lane's: the model gets the AGENTS.md of the lane's
// working directory, once, and an edit reaches the next new thread. It
// does not get a file an AGENTS.md link points to outside the lane (the
// database here), and it gets no more than codex's 32 KiB.
func TestIntegrationLaneAgentsMD(t *testing.T) {
	t.Parallel()
	ctx := integrationContext(t)
	w := newIsoWorld(t)
	m := codextest.NewModel(t)
	c := startIsolated(t, m, w)
	a, b := w.lanes["A"], w.lanes["B"]
	agentsA := filepath.Join(a.work, "AGENTS.md")
	writeFile(t, agentsA, "AGENTS-A: answer in haiku")
	if err := os.Symlink(w.db, filepath.Join(b.work, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}

	firstRequest := func(lane string) string {
		t.Helper()
		th, err := c.EnsureThread(ctx, "", w.confine(lane))
		if err != nil {
			t.Fatal(err)
		}
		completedTurn(t, ctx, c, th.ThreadID, "hello")
		return lastRequest(t, m, th.ThreadID).InputText()
	}
	got := firstRequest("A")
	if n := strings.Count(got, "AGENTS-A: answer in haiku"); n != 1 {
		t.Errorf("lane A's AGENTS.md is in the model's request %d times, want once:\n%s", n, got)
	}
	if !strings.Contains(got, "# AGENTS.md instructions for "+a.work) {
		t.Errorf("no AGENTS.md heading for %s in:\n%s", a.work, got)
	}

	if got := firstRequest("B"); strings.Contains(got, "SECRET-DB") || strings.Contains(got, "# AGENTS.md instructions for") {
		t.Errorf("lane B's AGENTS.md links out of the lane, yet the model got it:\n%s", got)
	}

	writeFile(t, agentsA, "HEAD-OF-DOC "+strings.Repeat("x", codex.ProjectDocMaxBytes)+" TAIL-OF-DOC")
	got = firstRequest("A")
	if !strings.Contains(got, "HEAD-OF-DOC") || strings.Contains(got, "TAIL-OF-DOC") || strings.Contains(got, "AGENTS-A") {
		t.Errorf("a new thread of lane A does not have the edited AGENTS.md cut at %d bytes (head %v, tail %v, old %v)",
			codex.ProjectDocMaxBytes, strings.Contains(got, "HEAD-OF-DOC"), strings.Contains(got, "TAIL-OF-DOC"), strings.Contains(got, "AGENTS-A"))
	}
}
