package cluster

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// startCodex starts the real app-server on home against the fake model m.
func startCodex(t *testing.T, ctx context.Context, m *codextest.Model, home string) *codex.Client {
	t.Helper()
	c, err := codex.Start(ctx, codex.Options{
		Command:      codextest.CodexBinary(t),
		Args:         codextest.Args(m.URL),
		Home:         home,
		Env:          codextest.Env(),
		Dir:          t.TempDir(),
		StartTimeout: 20 * time.Second,
		ClientName:   "gatewayd-test",
	})
	if err != nil {
		t.Fatalf("codex.Start: %v", err)
	}
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := c.Close(cctx); err != nil && !errors.Is(err, codex.ErrClosed) {
			t.Errorf("codex Close: %v", err)
		}
	})
	return c
}

func runTurn(t *testing.T, ctx context.Context, c *codex.Client, threadID, text string) {
	t.Helper()
	res, err := c.RunTurn(ctx, threadID, codex.TurnInput{Text: text}, codex.TurnEvents{})
	if err != nil {
		t.Fatalf("RunTurn(%q): %v", text, err)
	}
	if res.Status != codex.TurnStatus("completed") {
		t.Fatalf("RunTurn(%q) status = %q, error %+v", text, res.Status, res.Error)
	}
}

// A thread moves between nodes: its rollout, shipped from node A's
// CODEX_HOME after a turn and restored into node B's empty one, resumes by
// id in a second app-server, and the model sees the first exchange.
func TestShippedRolloutResumesWithItsContextOnAnotherHome(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	dsn := newDatabase(t)
	nodeA, nodeB := newNode(t, dsn, "node-a"), newNode(t, dsn, "node-b")
	m := codextest.NewModel(t)

	homeA := codextest.Home(t)
	a := startCodex(t, ctx, m, homeA)
	th, err := a.EnsureThread(ctx, "", codex.ThreadConfig{})
	if err != nil {
		t.Fatalf("EnsureThread on A: %v", err)
	}
	runTurn(t, ctx, a, th.ThreadID, "Remember this secret code: BANANA-42")
	leaseA := mustAcquire(t, nodeA, "lane", time.Minute)
	shipped, err := NewRollouts(nodeA.db).Ship(ctx, homeA, th.ThreadID, leaseA)
	if err != nil || shipped.Bytes == 0 {
		t.Fatalf("Ship from A = %+v, %v; want the first turn shipped", shipped, err)
	}
	t.Logf("first turn shipped: %d bytes of %s", shipped.Bytes, shipped.RelPath)

	// Node A is gone; node B takes the lane and restores the thread.
	if err := nodeA.Release(ctx, leaseA); err != nil {
		t.Fatal(err)
	}
	leaseB := mustAcquire(t, nodeB, "lane", time.Minute)
	homeB := codextest.Home(t)
	restored, err := NewRollouts(nodeB.db).Restore(ctx, homeB, th.ThreadID)
	if err != nil || restored.RelPath != shipped.RelPath {
		t.Fatalf("Restore into B = %+v, %v; want it at %s", restored, err, shipped.RelPath)
	}

	b := startCodex(t, ctx, m, homeB)
	resumed, err := b.EnsureThread(ctx, th.ThreadID, codex.ThreadConfig{})
	if err != nil || resumed.Outcome != codex.OutcomeResumed || resumed.ThreadID != th.ThreadID {
		t.Fatalf("EnsureThread(%s) on B = %+v, %v; want the same thread resumed", th.ThreadID, resumed, err)
	}
	runTurn(t, ctx, b, th.ThreadID, "What was the secret code?")
	req, ok := m.LastRequestWith("What was the secret code?")
	if !ok {
		t.Fatal("the model got no request for the turn on B")
	}
	if in := req.InputText(); !strings.Contains(in, "BANANA-42") || !strings.Contains(in, "ECHO: Remember this secret code") {
		t.Errorf("B's model request lacks the first exchange; input:\n%s", in)
	}

	// B goes on shipping the restored file where A left off.
	next, err := NewRollouts(nodeB.db).Ship(ctx, homeB, th.ThreadID, leaseB)
	if err != nil || next.From != restored.Bytes || next.Bytes == 0 {
		t.Fatalf("Ship from B = %+v, %v; want the second turn from offset %d", next, err, restored.Bytes)
	}
	t.Logf("second turn (after resume) shipped: %d bytes", next.Bytes)
}
