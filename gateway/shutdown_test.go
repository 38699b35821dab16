package gateway

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

func TestShutdownLeavesInterruptedTurnJournaledThenNotifiesOnce(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.DrainTimeout = 20 * time.Millisecond })
	h.cx.run = func(ctx context.Context, _, _ string, ev codex.TurnEvents) (codex.TurnResult, error) {
		<-h.cx.interr // runs until the gateway interrupts it
		return codex.TurnResult{Status: codex.TurnInterrupted, Text: "half"}, nil
	}
	h.start(t)
	h.send(t, "a", "m1", "long job")
	waitFor(t, "turn running", func() bool { return h.curThread(laneA) != "" })
	h.stop()
	if _, err := h.g.Deliver(context.Background(), Inbound{Address: apiAddr("a"), MessageID: "late", Text: "x"}); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("Deliver after shutdown = %v, want ErrShuttingDown", err)
	}
	if j, _ := h.st.Journal(context.Background()); len(j) != 1 || j[0].Text != "long job" {
		t.Fatalf("journal after shutdown %+v, want the cut-off turn", j)
	}
	if u, _ := h.st.rows(laneA); u != 0 {
		t.Errorf("cut-off turn committed %d user rows", u)
	}
	// Restart over the same store: exactly one cut-off notice.
	p2 := newFakePlatform()
	g2, err := New(Config{Logger: zaptest.NewLogger(t), Now: h.clock.Now}.WithDefaults(), h.st, newFakeCodex())
	if err != nil {
		t.Fatal(err)
	}
	g2.AddPlatform(p2)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- g2.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-g2.Ready()
	if o := p2.next(t); o.Text != CutOffNotice("long job") {
		t.Errorf("after restart %q, want the cut-off notice", o.Text)
	}
	if _, err := g2.Deliver(ctx, Inbound{Address: apiAddr("a"), MessageID: "r1", Text: "/retry"}); err != nil {
		t.Fatal(err)
	}
	if o := p2.replyTo(t, "r1"); o.Text != "re: long job" {
		t.Errorf("/retry after restart %q", o.Text)
	}
	select {
	case o := <-p2.out:
		t.Errorf("extra outbound %+v", o)
	default:
	}
}
