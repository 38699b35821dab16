package gateway

import (
	"context"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway/feature/compact"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// Regression tests for the races between a lane's turn and shutdown's drain:
// drain marks the running lanes cut off and then interrupts their threads,
// so the fake codex's Interrupt call (recorded on interr) is the signal that
// the lane is already cut off.

// awaitInterrupt blocks until drain interrupts a thread, or the test ends.
func awaitInterrupt(h *harness, release <-chan struct{}) string {
	select {
	case th := <-h.cx.interr:
		return th
	case <-release:
		return ""
	}
}

// releaseOnCleanup returns a channel closed when the test ends, so a fake
// hook blocked on a signal that never came cannot leak its goroutine.
func releaseOnCleanup(t *testing.T) <-chan struct{} {
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	return release
}

func (s *fakeStore) outboxRows() []store.OutboxMessage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]store.OutboxMessage(nil), s.outbox...)
}

func (s *fakeStore) journalFor(key string) (store.JournalEntry, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.journal[key]
	return e, ok
}

// restartNotices starts a second gateway over h's store (the next start of
// the daemon) and returns the texts recovery queued in the outbox. Recovery
// runs before Ready closes, so the rows are all there once it has.
func restartNotices(t *testing.T, h *harness) []string {
	t.Helper()
	before := len(h.st.outboxRows())
	g2, err := New(Config{Logger: zaptest.NewLogger(t), Now: h.clock.Now}.WithDefaults(), h.st, newFakeCodex())
	if err != nil {
		t.Fatal(err)
	}
	g2.AddPlatform(newFakePlatform())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g2.Run(ctx) }()
	select {
	case <-g2.Ready():
	case <-time.After(5 * time.Second):
		t.Fatal("restarted gateway not ready")
	}
	var texts []string
	for _, m := range h.st.outboxRows()[before:] {
		texts = append(texts, m.Text)
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("restarted Run: %v", err)
	}
	return texts
}

func countText(texts []string, want string) int {
	n := 0
	for _, s := range texts {
		if s == want {
			n++
		}
	}
	return n
}

// A compaction that shutdown interrupts must not be followed by the turn:
// the lane was cut off while compacting, so the message stays journaled and
// the next start tells the lane instead of the turn running half-drained.
func TestShutdownRaceCompactionCutOffDoesNotStartTurn(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.DrainTimeout = 50 * time.Millisecond
	}).compacting(t, compact.Config{At: 0.5})
	release := releaseOnCleanup(t)
	h.cx.usageFn = func(string) (codex.Usage, bool) {
		return codex.Usage{LastTotalTokens: 900, TotalTokens: 900, ContextWindow: 1000}, true
	}
	compacting := make(chan string, 1)
	interrupted := make(chan string, 1)
	h.cx.compactFn = func(thread string) (codex.Usage, codex.Usage, error) {
		compacting <- thread
		// Block until drain has marked the lane cut off and interrupted it.
		interrupted <- awaitInterrupt(h, release)
		return codex.Usage{LastTotalTokens: 900}, codex.Usage{LastTotalTokens: 100}, nil
	}
	h.start(t)
	h.send(t, "a", "m1", "hello")
	select {
	case th := <-compacting:
		if th != "t1" {
			t.Fatalf("compacting %q, want t1", th)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("auto compaction did not start")
	}
	h.stop() // drain times out, cuts the lane off, interrupts t1
	if th := <-interrupted; th != "t1" {
		t.Fatalf("drain interrupted %q, want t1", th)
	}

	if _, _, turns := h.cx.snapshot(); len(turns) != 0 {
		t.Errorf("RunTurn called %v after shutdown cut off the compaction", turns)
	}
	if e, ok := h.st.journalFor(laneA); !ok || e.Text != "hello" {
		t.Fatalf("journal for %s = %+v (present %v), want the cut-off turn", laneA, e, ok)
	}
	if u, a := h.st.rows(laneA); u != 0 || a != 0 {
		t.Errorf("cut-off turn committed %d user / %d assistant rows", u, a)
	}
	for _, m := range h.st.outboxRows() {
		if m.ReplyTo == "m1" {
			t.Errorf("cut-off turn answered m1: %q", m.Text)
		}
	}
	if n := countText(restartNotices(t, h), CutOffNotice("hello")); n != 1 {
		t.Errorf("next start queued %d cut-off notices, want 1", n)
	}
}

// runCutOffTurn runs one turn whose codex result arrives only after drain
// has cut the lane off and interrupted its thread, as when the turn ends
// just as the interrupt lands; status is what codex reports for it.
func runCutOffTurn(t *testing.T, status codex.TurnStatus) *harness {
	t.Helper()
	h := newHarness(t, func(c *Config) { c.DrainTimeout = 50 * time.Millisecond })
	release := releaseOnCleanup(t)
	running := make(chan string, 1)
	interrupted := make(chan string, 1)
	h.cx.run = func(_ context.Context, thread, _ string, _ codex.TurnEvents) (codex.TurnResult, error) {
		running <- thread
		interrupted <- awaitInterrupt(h, release)
		return codex.TurnResult{Status: status, Text: "done"}, nil
	}
	h.start(t)
	h.send(t, "a", "m1", "long job")
	select {
	case th := <-running:
		if th != "t1" {
			t.Fatalf("turn on %q, want t1", th)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("turn did not start")
	}
	h.stop()
	if th := <-interrupted; th != "t1" {
		t.Fatalf("drain interrupted %q, want t1", th)
	}
	return h
}

// A turn that completed while drain was cutting it off is in the thread:
// it is committed like any other, not left for /retry (which would run it
// twice).
func TestShutdownRaceCompletedTurnIsCommitted(t *testing.T) {
	h := runCutOffTurn(t, codex.TurnCompleted)

	if u, a := h.st.rows(laneA); u != 1 || a != 1 {
		t.Errorf("transcript has %d user / %d assistant rows, want 1/1", u, a)
	}
	if l := h.st.lane(laneA); l.ThreadID != "t1" || l.Binding != store.BindingConfirmed {
		t.Errorf("binding %q/%q, want t1 confirmed", l.ThreadID, l.Binding)
	}
	if e, ok := h.st.journalFor(laneA); ok {
		t.Errorf("journal still holds %+v, want it cleared", e)
	}
	replies := 0
	for _, m := range h.st.outboxRows() {
		if m.ReplyTo == "m1" {
			replies++
			if m.Text != "done" {
				t.Errorf("reply to m1 %q, want %q", m.Text, "done")
			}
		}
	}
	if replies != 1 {
		t.Errorf("%d outbox replies to m1, want 1", replies)
	}
	if n := countText(restartNotices(t, h), CutOffNotice("long job")); n != 0 {
		t.Errorf("next start queued %d cut-off notices for a committed turn", n)
	}
}

// The contrast: a turn the interrupt did stop stays journaled, uncommitted,
// so the next start offers /retry.
func TestShutdownRaceInterruptedTurnStaysJournaled(t *testing.T) {
	h := runCutOffTurn(t, codex.TurnInterrupted)

	if u, a := h.st.rows(laneA); u != 0 || a != 0 {
		t.Errorf("interrupted cut-off turn committed %d user / %d assistant rows", u, a)
	}
	if e, ok := h.st.journalFor(laneA); !ok || e.Text != "long job" {
		t.Fatalf("journal for %s = %+v (present %v), want the cut-off turn", laneA, e, ok)
	}
	if l := h.st.lane(laneA); l.Binding == store.BindingConfirmed {
		t.Errorf("binding confirmed by an interrupted cut-off turn")
	}
	for _, m := range h.st.outboxRows() {
		if m.ReplyTo == "m1" {
			t.Errorf("interrupted cut-off turn answered m1: %q", m.Text)
		}
	}
	if n := countText(restartNotices(t, h), CutOffNotice("long job")); n != 1 {
		t.Errorf("next start queued %d cut-off notices, want 1", n)
	}
}
