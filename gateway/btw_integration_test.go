package gateway_test

import (
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
)

// TestIntegrationSideQuestionLeavesTheLaneUntouched: /btw is answered
// with the lane's context (the fork's request carries the lane's secret)
// and marked as a side answer, and the lane's next request has neither
// the question nor its answer.
func TestIntegrationSideQuestionLeavesTheLaneUntouched(t *testing.T) {
	w := newWorld(t)
	gw := w.start(t, gateway.Config{})
	if r := gw.ask(t, "alpha", "/btw anything?"); !strings.Contains(r.Reply, "no Codex thread yet") {
		t.Errorf("/btw before any turn answered %q", r.Reply)
	}
	first := gw.ask(t, "alpha", "Remember the code BANANA-42")
	r := gw.ask(t, "alpha", "/btw SIDE-QUESTION what was the code?")
	if !strings.HasPrefix(r.Reply, "Side answer") || !strings.Contains(r.Reply, "ECHO: SIDE-QUESTION") {
		t.Errorf("/btw answered %q", r.Reply)
	}
	side, ok := w.model.LastRequestWith("SIDE-QUESTION")
	if !ok {
		t.Fatal("the side question never reached the model")
	}
	if !strings.Contains(side.InputText(), "BANANA-42") {
		t.Error("the side question was asked without the lane's context")
	}
	if side.Header.Get("thread-id") == first.ThreadID {
		t.Error("the side question ran on the lane's own thread")
	}
	next := gw.ask(t, "alpha", "back to work")
	if next.ThreadID != first.ThreadID {
		t.Errorf("the lane moved to thread %s", next.ThreadID)
	}
	if text := w.lastRequestFor(t, next.ThreadID); strings.Contains(text, "SIDE-QUESTION") || !strings.Contains(text, "BANANA-42") {
		t.Errorf("the lane's next request should keep its context and lack the side question:\n%s", text)
	}
	if r := gw.ask(t, "alpha", "/btw"); !strings.Contains(r.Reply, "Usage: /btw") {
		t.Errorf("/btw without a question answered %q", r.Reply)
	}
}
