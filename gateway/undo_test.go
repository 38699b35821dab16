package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// TestUndoIsRefusedWhileATurnRuns: /undo during a turn is answered at
// once with the refusal and the turn goes on to its answer.
func TestUndoIsRefusedWhileATurnRuns(t *testing.T) {
	h := newHarness(t)
	started, release := make(chan struct{}), make(chan struct{})
	h.cx.run = func(ctx context.Context, thread, text string, ev codex.TurnEvents) (codex.TurnResult, error) {
		close(started)
		<-release
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "done " + text}, nil
	}
	h.start(t)
	h.send(t, "a", "m1", "long work")
	<-started
	h.send(t, "a", "u1", "/undo")
	if o := h.p.replyTo(t, "u1"); o.Text != ext.BetweenTurnsText("undo") {
		t.Errorf("/undo during a turn answered %q", o.Text)
	}
	close(release)
	if o := h.p.replyTo(t, "m1"); o.Text != "done long work" {
		t.Errorf("the turn answered %q", o.Text)
	}
}

// TestUndoReportsCodexFailure: when codex cannot list the thread's
// turns, /undo says why instead of answering nothing.
func TestUndoReportsCodexFailure(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	h.send(t, "a", "m1", "one")
	h.p.replyTo(t, "m1")
	h.send(t, "a", "u1", "/undo")
	if o := h.p.replyTo(t, "u1"); !strings.Contains(o.Text, "Could not undo: Codex did not list the thread's turns") {
		t.Errorf("/undo with codex failing answered %q", o.Text)
	}
}
