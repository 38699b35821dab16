package gateway

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"

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

// TestAnEditWhileItsThreadLoadsReplacesTheText: a message taken from the
// queue is not the running turn yet while its thread loads; an edit then
// still replaces what its turn runs, what a restart would run (the inbox
// row) and what the journal says it runs.
func TestAnEditWhileItsThreadLoadsReplacesTheText(t *testing.T) {
	h := newHarness(t)
	loading, loaded := make(chan struct{}), make(chan struct{})
	h.cx.ensureFn = func(string) (codex.Ensured, error) { // called with h.cx.mu held
		close(loading)
		<-loaded
		return codex.Ensured{ThreadID: h.cx.newThread(), Outcome: codex.OutcomeStarted}, nil
	}
	var journaled []string
	h.cx.run = func(_ context.Context, _, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		entries, _ := h.st.Journal(context.Background())
		for _, e := range entries {
			journaled = append(journaled, e.Text)
		}
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "re: " + text}, nil
	}
	h.start(t)
	h.send(t, "a", "m1", "frist")
	<-loading
	deliverEdit(t, h, "m1", "first")
	close(loaded)
	if o := h.p.replyTo(t, "m1"); o.Text != "re: first" {
		t.Errorf("the turn ran as %q, want its edit", o.Text)
	}
	if len(journaled) != 1 || journaled[0] != "first" {
		t.Errorf("journaled %q while it ran, want the edited text", journaled)
	}
	for _, row := range h.st.inboundRows() {
		if row.MessageID == "m1" && row.Text != "first" {
			t.Errorf("the inbox row keeps %q; a restart would run the unedited text", row.Text)
		}
	}
}

// TestAnEditAsItsTurnStartsIsSteered: an edit that arrives after the
// turn's text went to turn/start but before codex has the turn (a steer
// would find none) waits for it and is steered in, not dropped.
func TestAnEditAsItsTurnStartsIsSteered(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHarness(t)
		var inCodex atomic.Bool
		var mu sync.Mutex
		var steered []string
		h.cx.steerFn = func(_, text string) error {
			if !inCodex.Load() {
				return fmt.Errorf("fake: %w", codex.ErrNoActiveTurn)
			}
			mu.Lock()
			steered = append(steered, text)
			mu.Unlock()
			return nil
		}
		h.cx.starting = func(string) {
			go deliverEdit(t, h, "m1", "first")
			synctest.Wait() // the edit was handled, or waits for codex to have the turn
			inCodex.Store(true)
		}
		h.cx.run = func(_ context.Context, _, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
			synctest.Wait() // a waiting edit is steered before the turn ends
			return codex.TurnResult{Status: codex.TurnCompleted, Text: "re: " + text}, nil
		}
		h.start(t)
		h.send(t, "a", "m1", "frist")
		h.p.replyTo(t, "m1")
		mu.Lock()
		defer mu.Unlock()
		if len(steered) != 1 || steered[0] != "(edited) first" {
			t.Errorf("steered %q, want the edit once codex had the turn", steered)
		}
	})
}

// deliverEdit delivers the edit of message id in lane "a".
func deliverEdit(t *testing.T, h *harness, id, text string) {
	t.Helper()
	if _, err := h.g.Deliver(context.Background(), Inbound{Address: apiAddr("a"), MessageID: id, SenderID: "u1", Text: text, Edited: true}); err != nil {
		t.Error(err)
	}
}
