package gateway

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/store"
)

func TestOutboxRetriesAndGivesUp(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	calls := 0
	h.p.sendFn = func(o Outbound) (string, error) {
		calls++
		switch calls {
		case 1:
			return "", &RetryAfterError{After: 30 * time.Second, Err: errors.New("429")}
		case 2:
			return "", errors.New("connection reset")
		}
		return "", nil
	}
	h.st.Enqueue(ctx, store.OutboxMessage{SessionKey: laneA, Platform: "test", Kind: "api", ChatID: "a", Text: "hello"})
	h.st.Enqueue(ctx, store.OutboxMessage{SessionKey: laneA, Platform: "test", Kind: "api", ChatID: "a", Text: "second"})
	h.g.deliverDue(ctx)
	if calls != 1 {
		t.Fatalf("sends %d; the lane's second row must wait behind the first", calls)
	}
	h.clock.Advance(29 * time.Second)
	h.g.deliverDue(ctx)
	if calls != 1 {
		t.Fatalf("retried before Retry-After elapsed")
	}
	h.clock.Advance(time.Second)
	h.g.deliverDue(ctx) // transient error → backoff
	h.clock.Advance(fullRetryDelay(1))
	h.g.deliverDue(ctx)
	if got := []string{(<-h.p.out).Text, (<-h.p.out).Text}; fmt.Sprint(got) != "[hello second]" {
		t.Errorf("delivered %v, want in order", got)
	}
	h.p.sendFn = func(Outbound) (string, error) { return "", fmt.Errorf("chat gone: %w", ErrPermanent) }
	h.st.Enqueue(ctx, store.OutboxMessage{SessionKey: laneA, Platform: "test", Kind: "api", ChatID: "a", Text: "lost"})
	h.g.deliverDue(ctx)
	h.st.mu.Lock()
	state := h.st.outbox[2].State
	h.st.mu.Unlock()
	if state != store.OutboxFailed {
		t.Errorf("permanent failure left the row %q", state)
	}
}

// fullRetryDelay is a retry delay before jitter shortened it: waiting this
// long always finds the row due.
func fullRetryDelay(attempts int) time.Duration {
	b := retryDelays
	b.Jitter = -1
	return b.At(attempts)
}

func TestRetryDelayDoublesToItsCapWithJitter(t *testing.T) {
	tests := []struct {
		attempts int
		full     time.Duration
	}{
		{0, 2 * time.Second}, {3, 16 * time.Second}, {40, 5 * time.Minute},
	}
	for _, tt := range tests {
		if got := fullRetryDelay(tt.attempts); got != tt.full {
			t.Errorf("full delay after %d failures = %v, want %v", tt.attempts, got, tt.full)
		}
		if got := retryDelay(tt.attempts); got > tt.full || got < tt.full*8/10 {
			t.Errorf("delay after %d failures = %v, want within 80-100%% of %v", tt.attempts, got, tt.full)
		}
	}
}

func TestSlowPlatformDoesNotHoldUpOthers(t *testing.T) {
	h := newHarness(t)
	slow := newFakePlatform()
	slow.name = "slow"
	unblock := make(chan struct{})
	slow.sendFn = func(Outbound) (string, error) { <-unblock; return "", nil }
	h.g.AddPlatform(slow)
	ctx := context.Background()
	h.st.Enqueue(ctx, store.OutboxMessage{SessionKey: "v1:slow:x", Platform: "slow", Kind: "api", ChatID: "x", Text: "stuck"})
	h.st.Enqueue(ctx, store.OutboxMessage{SessionKey: laneA, Platform: "test", Kind: "api", ChatID: "a", Text: "fast"})
	done := make(chan struct{})
	go func() { h.g.deliverDue(ctx); close(done) }()
	if o := h.p.next(t); o.Text != "fast" {
		t.Errorf("got %q", o.Text)
	}
	close(unblock)
	<-done
	if o := slow.next(t); o.Text != "stuck" {
		t.Errorf("slow platform got %q", o.Text)
	}
}

// ctxPlatform is a platform whose Send blocks until released and fails if
// its context was cancelled meanwhile, as a real HTTP client would.
type ctxPlatform struct {
	*fakePlatform
	entered chan struct{}
	release chan struct{}
}

func (p *ctxPlatform) Send(ctx context.Context, out Outbound) (string, error) {
	close(p.entered)
	<-p.release
	if err := ctx.Err(); err != nil {
		return "", err
	}
	return p.fakePlatform.Send(ctx, out)
}

// A reply already on the wire when the deliverer stops must be finished and
// marked sent; otherwise a restart would send it a second time.
func TestStoppingDelivererFinishesSendInFlight(t *testing.T) {
	h := newHarness(t)
	p := &ctxPlatform{fakePlatform: newFakePlatform(), entered: make(chan struct{}), release: make(chan struct{})}
	p.name = "wire"
	h.g.AddPlatform(p)
	h.st.Enqueue(context.Background(), store.OutboxMessage{SessionKey: "v1:wire:x", Platform: "wire", Kind: "api", ChatID: "x", Text: "on the wire"})
	h.st.Enqueue(context.Background(), store.OutboxMessage{SessionKey: "v1:wire:x", Platform: "wire", Kind: "api", ChatID: "x", Text: "not started"})
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { h.g.deliverDue(ctx); close(done) }()
	<-p.entered
	stop()
	close(p.release)
	<-done
	if o := p.next(t); o.Text != "on the wire" {
		t.Fatalf("sent %q", o.Text)
	}
	h.st.mu.Lock()
	first, second := h.st.outbox[0].State, h.st.outbox[1].State
	h.st.mu.Unlock()
	if first != store.OutboxSent {
		t.Errorf("the send in flight was left %q, want sent", first)
	}
	if second != "" && second != store.OutboxPending {
		t.Errorf("a row not yet started was %q, want it left pending for the next start", second)
	}
}

// A reply that fails and is retried must reach the platform labelled as the
// same reply each time (kind and turn info), or a platform that resumes a
// split message by its identity would start again from the first chunk.
func TestRetriedReplyKeepsItsTurnInfo(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	var kinds []OutKind
	h.p.sendFn = func(o Outbound) (string, error) {
		kinds = append(kinds, o.Kind)
		if len(kinds) == 1 {
			return "", errors.New("connection reset")
		}
		return "", nil
	}
	h.g.putTurnInfo(laneA, "m1", TurnInfo{ThreadID: "t1", TurnID: "u1", Status: "completed"})
	h.st.Enqueue(ctx, store.OutboxMessage{SessionKey: laneA, Platform: "test", Kind: "api", ChatID: "a", Text: "answer", ReplyTo: "m1"})
	h.g.deliverDue(ctx)
	h.clock.Advance(fullRetryDelay(0))
	h.g.deliverDue(ctx)
	if fmt.Sprint(kinds) != "[reply reply]" {
		t.Fatalf("attempts labelled %v, want the reply both times", kinds)
	}
	if o := h.p.next(t); o.Turn == nil || o.Turn.TurnID != "u1" {
		t.Errorf("the retried reply lost its turn info: %+v", o.Turn)
	}
	if ti := h.g.peekTurnInfo(laneA, "m1"); ti != nil {
		t.Errorf("turn info kept after the reply was sent: %+v", ti)
	}
}
