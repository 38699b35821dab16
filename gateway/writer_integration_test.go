package gateway_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/feature/projects"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// holds asks the terminal to write to thread: nil when it could (it
// then has the thread until it releases it), ErrStaleWriter while another
// client still writes to it.
func holds(t *testing.T, term *codex.Client, thread string) error {
	t.Helper()
	_, err := term.EnsureThread(context.Background(), thread, codex.ThreadConfig{})
	if err != nil && !errors.Is(err, codex.ErrStaleWriter) {
		t.Fatalf("terminal EnsureThread(%s): %v", thread, err)
	}
	return err
}

// letGo releases thread from the terminal, as quitting the CLI does.
func letGo(t *testing.T, term *codex.Client, thread string) {
	t.Helper()
	if err := term.Release(context.Background(), thread); err != nil {
		t.Fatalf("terminal release %s: %v", thread, err)
	}
}

// TestIntegrationOneWriterPerThread: codex lets one client at a time
// write to a thread. /attach of a thread a second real app-server (the
// CLI) keeps open is refused with the ways out and changes nothing, and
// /fork of it works meanwhile; the same /attach succeeds once the CLI lets
// go. The lane's writer is let go, so the CLI can resume the thread, after
// /handoff, after the lane's thread is evicted, after /reset and once
// gatewayd stops; while the CLI writes, the lane's message is refused
// with a notice that says so.
func TestIntegrationOneWriterPerThread(t *testing.T) {
	w := newWorld(t)
	repo := gitRepo(t)
	w.features.CodexHome = w.home
	w.features.Projects = projects.Settings{Projects: map[string]string{"app": repo}}
	gw := w.start(t, gateway.Config{MaxLive: 1})
	term := w.terminal(t)
	ctx := context.Background()
	cli, err := term.EnsureThread(ctx, "", codex.ThreadConfig{Cwd: repo})
	if err != nil {
		t.Fatalf("terminal thread: %v", err)
	}
	if res, err := term.RunTurn(ctx, cli.ThreadID, codex.TurnInput{Text: "CLI-SESSION remember the word PAPAYA"}, codex.TurnEvents{}); err != nil || res.Status != codex.TurnCompleted {
		t.Fatalf("terminal turn: %+v, %v", res, err)
	}
	th := cli.ThreadID // the terminal keeps it open

	gw.ask(t, "alpha", "/project app")
	own := gw.ask(t, "alpha", "lane work").ThreadID
	r := gw.ask(t, "alpha", "/attach "+th).Reply
	for _, want := range []string{"Thread " + th + " is open in another Codex client", "one client at a time", "/attach " + th + " again", "/fork " + th} {
		if !strings.Contains(r, want) {
			t.Errorf("/attach of a thread the CLI writes to answered %q; want %q in it", r, want)
		}
	}
	if next := gw.ask(t, "alpha", "still mine?"); next.ThreadID != own {
		t.Fatalf("after the refused /attach the lane ran on %s, want its own %s", next.ThreadID, own)
	}
	if f := gw.ask(t, "alpha", "/fork "+th+" papaya").Reply; !strings.HasPrefix(f, `Forked into "papaya": thread `) {
		t.Errorf("/fork of the thread the CLI writes to answered %q", f)
	}

	letGo(t, term, th)
	if r := gw.ask(t, "alpha", "/attach "+th).Reply; !strings.Contains(r, "Attached thread "+th) {
		t.Fatalf("/attach once the CLI let go answered %q", r)
	}
	gw.ask(t, "alpha", "now the lane writes")
	if holds(t, term, th) == nil {
		t.Fatal("the CLI resumed the thread the lane writes to")
	}

	// /handoff lets go; the lane is refused while the CLI writes.
	if h := gw.ask(t, "alpha", "/handoff").Reply; !strings.Contains(h, "has let go") || !strings.Contains(h, "codex resume "+th) {
		t.Errorf("/handoff answered %q", h)
	}
	if err := holds(t, term, th); err != nil {
		t.Fatalf("after /handoff the CLI could not resume the thread: %v", err)
	}
	if r := gw.ask(t, "alpha", "while the CLI writes"); !strings.Contains(r.Reply, "open in another Codex client") || !strings.Contains(r.Reply, "/fork") {
		t.Errorf("a message while the CLI writes was answered %q", r.Reply)
	}
	if h := gw.ask(t, "alpha", "/handoff").Reply; !strings.Contains(h, "already open in another Codex client") {
		t.Errorf("/handoff while the CLI writes answered %q", h)
	}
	letGo(t, term, th)

	// Evicted (lanes.max_live 1: another lane's turn), the lane lets go.
	gw.ask(t, "alpha", "the lane writes again")
	if holds(t, term, th) == nil {
		t.Fatal("the CLI resumed the thread the lane writes to")
	}
	gw.ask(t, "beta", "another lane's turn evicts alpha's thread")
	gw.waitIdle(t)
	if err := holds(t, term, th); err != nil {
		t.Fatalf("after eviction the CLI could not resume the thread: %v", err)
	}
	letGo(t, term, th)

	// /reset lets go of the thread it leaves.
	gw.ask(t, "alpha", "and again")
	gw.ask(t, "alpha", "/reset")
	if err := holds(t, term, th); err != nil {
		t.Fatalf("after /reset the CLI could not resume the thread: %v", err)
	}
	letGo(t, term, th)

	// gatewayd stopping lets go of every thread.
	last := gw.ask(t, "alpha", "a fresh conversation").ThreadID
	if holds(t, term, last) == nil {
		t.Fatal("the CLI resumed the thread the lane writes to")
	}
	gw.stop()
	if err := holds(t, term, last); err != nil {
		t.Fatalf("after gatewayd stopped the CLI could not resume the thread: %v", err)
	}
}
