package gateway

import (
	"context"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// LaneState follows a lane from idle through a running turn with a message
// queued behind it, and back to idle.
func TestLaneStateShowsRunningAndQueued(t *testing.T) {
	h := newHarness(t)
	entered := make(chan string, 2)
	release := make(chan struct{})
	h.cx.run = func(_ context.Context, _, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		entered <- text
		<-release
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "re: " + text}, nil
	}
	h.start(t)
	key := apiAddr("a").SessionKey()
	if s := h.g.LaneState(key); s != (LaneState{}) {
		t.Fatalf("before any message: %+v, want idle", s)
	}
	h.send(t, "a", "m1", "first")
	<-entered
	h.send(t, "a", "m2", "second")
	waitFor(t, "the second message to queue", func() bool { return h.g.LaneState(key).Queued == 1 })
	if s := h.g.LaneState(key); !s.Running {
		t.Errorf("during the first turn: %+v, want running", s)
	}
	if s := h.g.LaneState(apiAddr("b").SessionKey()); s != (LaneState{}) {
		t.Errorf("another lane: %+v, want idle", s)
	}
	close(release)
	collect(t, h.p, "m1", "m2")
	waitFor(t, "the lane to go idle", func() bool { return h.g.LaneState(key) == LaneState{} })
}
