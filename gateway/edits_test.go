package gateway

import (
	"context"
	"sync"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// TestEditsOfMessages: an edit of a queued message replaces what its turn
// runs (and what a restart would run); an edit of the running turn's
// message is steered into it as "(edited) …"; an edit of an answered
// message, or of one never seen, changes nothing.
func TestEditsOfMessages(t *testing.T) {
	h := newHarness(t)
	started, release := make(chan struct{}), make(chan struct{})
	var mu sync.Mutex
	var steered []string
	h.cx.steerFn = func(_, text string) error {
		mu.Lock()
		steered = append(steered, text)
		mu.Unlock()
		return nil
	}
	h.cx.run = func(_ context.Context, _, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		if text == "first" {
			close(started)
			<-release
		}
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "re: " + text}, nil
	}
	h.start(t)
	ctx := context.Background()
	edit := func(id, text string) {
		t.Helper()
		if _, err := h.g.Deliver(ctx, Inbound{Address: apiAddr("a"), MessageID: id, SenderID: "u1", Text: text, Edited: true}); err != nil {
			t.Fatal(err)
		}
	}
	h.send(t, "a", "m1", "first")
	<-started
	h.send(t, "a", "m2", "secnod")
	edit("m2", "second")
	edit("m1", "first, with a fix")
	edit("never-seen", "ghost")
	mu.Lock()
	got := append([]string(nil), steered...)
	mu.Unlock()
	if len(got) != 1 || got[0] != "(edited) first, with a fix" {
		t.Errorf("steered %q, want the running message's edit", got)
	}
	close(release)
	if o := h.p.replyTo(t, "m2"); o.Text != "re: second" {
		t.Errorf("the queued message ran as %q, want its edit", o.Text)
	}
	for _, row := range h.st.inboundRows() {
		if row.MessageID == "m2" && row.Text != "second" {
			t.Errorf("the inbox row keeps %q; a restart would run the unedited text", row.Text)
		}
	}
	edit("m2", "too late")
	_, _, turns := h.cx.snapshot()
	if len(turns) != 2 {
		t.Errorf("turns %v, want two (an edit starts none)", turns)
	}
}
