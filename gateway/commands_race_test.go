package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// Commands run on the platform's delivery goroutine, so an app-server that
// never answers turn/interrupt must not hold /stop or /new (and with them
// every other lane of the platform) forever.
func TestStopAndNewReturnWhenTheAppServerHangs(t *testing.T) {
	h := newHarness(t)
	h.g.controls.callTimeout = 50 * time.Millisecond
	release := make(chan struct{})
	h.cx.run = func(ctx context.Context, _, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		<-release
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "re: " + text}, nil
	}
	h.cx.interruptFn = func(ctx context.Context, _ string) error {
		<-ctx.Done() // a hung app-server: no answer until the caller gives up
		return ctx.Err()
	}
	h.start(t)
	t.Cleanup(func() { close(release) }) // runs before the harness stops
	h.send(t, "a", "1", "long job")
	waitFor(t, "the turn to run", func() bool { _, _, turns := h.cx.snapshot(); return len(turns) == 1 })

	for _, cmd := range []string{"/stop", "/new"} {
		done := make(chan struct{})
		go func() {
			defer close(done)
			h.send(t, "a", "cmd"+cmd, cmd)
		}()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s is still blocked on the hung interrupt", cmd)
		}
	}
	if o := h.p.replyTo(t, "cmd/stop"); !strings.Contains(o.Text, "Could not stop") {
		t.Errorf("/stop answered %q, want it to say the stop failed", o.Text)
	}
	if o := h.p.replyTo(t, "cmd/new"); !strings.Contains(o.Text, "new conversation") {
		t.Errorf("/new answered %q", o.Text)
	}
}

// pausingResetStore holds ResetLane after it committed, so a test can end
// the running turn while /new is between the store and the queue.
type pausingResetStore struct {
	*fakeStore
	committed chan struct{}
	resume    chan struct{}
}

func (s *pausingResetStore) ResetLane(ctx context.Context, key, reason string) (store.Lane, error) {
	l, err := s.fakeStore.ResetLane(ctx, key, reason)
	close(s.committed)
	<-s.resume
	return l, err
}

// A message sent before /new belongs to the old conversation: even when the
// running turn ends while the reset is being written, the worker must not
// run it in the fresh thread.
func TestMessageQueuedBeforeNewNeverRunsInTheFreshThread(t *testing.T) {
	h := newHarness(t)
	st := &pausingResetStore{fakeStore: h.st, committed: make(chan struct{}), resume: make(chan struct{})}
	g, err := New(Config{MaxLive: 16, QueueLimit: 10, MaxConcurrentTurns: 4, DrainTimeout: 2 * time.Second,
		Logger: zaptest.NewLogger(t), Now: h.clock.Now}.WithDefaults(), st, h.cx)
	if err != nil {
		t.Fatal(err)
	}
	g.AddPlatform(h.p)
	h.g = g
	block := make(chan struct{})
	h.cx.run = func(_ context.Context, _, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		if text == "first" {
			<-block
		}
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "re: " + text}, nil
	}
	h.start(t)
	h.send(t, "a", "1", "first")
	waitFor(t, "the first turn to run", func() bool { _, _, turns := h.cx.snapshot(); return len(turns) == 1 })
	h.send(t, "a", "2", "second, sent before /new")
	reset := make(chan struct{})
	go func() { defer close(reset); h.send(t, "a", "3", "/new") }()
	<-st.committed
	close(block) // the running turn ends while /new is between store and queue
	waitFor(t, "the lane's worker to go idle", func() bool { return h.g.Stats().ActiveLanes == 0 })
	close(st.resume)
	<-reset
	_, _, turns := h.cx.snapshot()
	for _, tr := range turns {
		if strings.Contains(tr, "second") {
			t.Fatalf("a message sent before /new ran after the reset: turns %v", turns)
		}
	}
	if got := h.st.inboundState(2); got != store.InboundIgnored {
		t.Errorf("the dropped message's inbox row is %q, want ignored", got)
	}
}
