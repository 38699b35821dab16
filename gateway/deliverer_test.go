package gateway

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/outbox"
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
	h.g.out.DeliverDue(ctx)
	if calls != 1 {
		t.Fatalf("sends %d; the lane's second row must wait behind the first", calls)
	}
	h.clock.Advance(29 * time.Second)
	h.g.out.DeliverDue(ctx)
	if calls != 1 {
		t.Fatalf("retried before Retry-After elapsed")
	}
	h.clock.Advance(time.Second)
	h.g.out.DeliverDue(ctx) // transient error → backoff
	h.clock.Advance(outbox.MaxRetryDelay(1))
	h.g.out.DeliverDue(ctx)
	if got := []string{(<-h.p.out).Text, (<-h.p.out).Text}; fmt.Sprint(got) != "[hello second]" {
		t.Errorf("delivered %v, want in order", got)
	}
	h.p.sendFn = func(Outbound) (string, error) { return "", fmt.Errorf("chat gone: %w", ErrPermanent) }
	h.st.Enqueue(ctx, store.OutboxMessage{SessionKey: laneA, Platform: "test", Kind: "api", ChatID: "a", Text: "lost"})
	h.g.out.DeliverDue(ctx)
	h.st.mu.Lock()
	state := h.st.outbox[2].State
	h.st.mu.Unlock()
	if state != store.OutboxFailed {
		t.Errorf("permanent failure left the row %q", state)
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
	go func() { h.g.out.DeliverDue(ctx); close(done) }()
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
	go func() { h.g.out.DeliverDue(ctx); close(done) }()
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
// same reply each time (kind and turn info): the row carries them, so a
// restart does too.
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
	h.st.Enqueue(ctx, store.OutboxMessage{SessionKey: laneA, Platform: "test", Kind: "api", ChatID: "a", Text: "answer",
		ReplyTo: "m1", OutKind: store.OutboxReply, ThreadID: "t1", TurnID: "u1", TurnStatus: "completed"})
	h.g.out.DeliverDue(ctx)
	h.clock.Advance(outbox.MaxRetryDelay(0))
	h.g.out.DeliverDue(ctx)
	if fmt.Sprint(kinds) != "[reply reply]" {
		t.Fatalf("attempts labelled %v, want the reply both times", kinds)
	}
	if o := h.p.next(t); o.Turn == nil || *o.Turn != (TurnInfo{ThreadID: "t1", TurnID: "u1", Status: "completed"}) {
		t.Errorf("the retried reply lost its turn info: %+v", o.Turn)
	}
}

// splitPlatform sends a text split at "|" part by part, as the real
// adapters do: it skips the parts already sent and records each one; it
// fails once after failAfter parts.
type splitPlatform struct {
	*fakePlatform
	failAfter int
	posted    []string // every part sent to the "platform", in order
	// deferLast records the last part with Outbound.RecordLastPart, as
	// the Telegram adapter does.
	deferLast bool
}

func (p *splitPlatform) Send(ctx context.Context, out Outbound) (string, error) {
	parts := strings.Split(out.Text, "|")
	for i := len(out.SentParts); i < len(parts); i++ {
		if p.failAfter == 0 {
			p.failAfter = -1
			return "", errors.New("connection reset")
		}
		p.failAfter--
		p.posted = append(p.posted, parts[i])
		record := out.RecordPart
		if p.deferLast && i == len(parts)-1 {
			record = out.RecordLastPart
		}
		if err := record(ctx, i, "pm-"+parts[i]); err != nil {
			return "", err
		}
	}
	return "pm-" + parts[len(parts)-1], nil
}

// A row whose first parts were sent (and recorded) before a failure, or
// by a process that crashed, gets only the remaining parts.
func TestDelivererSendsOnlyTheRemainingParts(t *testing.T) {
	tests := []struct {
		name      string
		recorded  []string // parts recorded before the deliverer runs (an earlier process)
		want      []string
		deferLast bool
	}{
		{name: "fresh row, first attempt fails after two parts", want: []string{"a", "b", "c", "d"}},
		{name: "two parts recorded by an earlier process", recorded: []string{"a", "b"}, want: []string{"c", "d"}},
		{name: "every part recorded, not yet marked sent", recorded: []string{"a", "b", "c", "d"}, want: nil},
		{name: "last part recorded with the sent mark", want: []string{"a", "b", "c", "d"}, deferLast: true},
		{name: "last part deferred after an earlier process", recorded: []string{"a"}, want: []string{"b", "c", "d"}, deferLast: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			ctx := context.Background()
			p := &splitPlatform{fakePlatform: newFakePlatform(), failAfter: 2, deferLast: tt.deferLast}
			p.name = "split"
			h.g.AddPlatform(p)
			id, _ := h.st.Enqueue(ctx, store.OutboxMessage{SessionKey: "v1:split:x", Platform: "split", Kind: "api",
				ChatID: "x", Text: "a|b|c|d"})
			for i, part := range tt.recorded {
				if err := h.st.RecordPart(ctx, id, i, "pm-"+part); err != nil {
					t.Fatal(err)
				}
			}
			if len(tt.recorded) > 0 {
				p.failAfter = -1
			}
			h.g.out.DeliverDue(ctx)
			h.clock.Advance(outbox.MaxRetryDelay(0))
			h.g.out.DeliverDue(ctx)
			if fmt.Sprint(p.posted) != fmt.Sprint(tt.want) {
				t.Fatalf("parts posted %v, want %v", p.posted, tt.want)
			}
			h.st.mu.Lock()
			row := h.st.outbox[id-1]
			h.st.mu.Unlock()
			if row.State != store.OutboxSent || row.PlatformMessageID != "pm-d" ||
				fmt.Sprint(row.SentParts) != "[pm-a pm-b pm-c pm-d]" {
				t.Fatalf("row %s %q parts %v; want sent as pm-d with every part recorded", row.State, row.PlatformMessageID, row.SentParts)
			}
		})
	}
}

// A one-part reply whose adapter defers the last part's record costs one
// commit for the part and the sent mark, not two, and both are on disk.
func TestOnePartReplyIsMarkedSentInOneCommit(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, filepath.Join(t.TempDir(), "gatewayd.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.EnsureLane(ctx, store.LaneKey{SessionKey: "v1:split:x", Platform: "split", Kind: "api", ChatID: "x"}); err != nil {
		t.Fatal(err)
	}
	id, err := st.Enqueue(ctx, store.OutboxMessage{SessionKey: "v1:split:x", Platform: "split", Kind: "api", ChatID: "x", Text: "only"})
	if err != nil {
		t.Fatal(err)
	}
	p := &splitPlatform{fakePlatform: newFakePlatform(), failAfter: -1, deferLast: true}
	p.name = "split"
	d := outbox.NewCourier(st, map[string]Platform{"split": p}, nil, zap.NewNop(), NopObserver{}, time.Now)
	commits := st.Commits()
	d.DeliverDue(ctx)
	if got := st.Commits() - commits; got != 1 {
		t.Errorf("commits for a one-part delivery = %d, want 1", got)
	}
	rows, err := st.DueOutbox(ctx, time.Now().Add(time.Hour), 10)
	if err != nil || len(rows) != 0 {
		t.Fatalf("due rows %+v, %v; want none: the row is sent", rows, err)
	}
	if err := st.RecordPart(ctx, id, 1, "pm-next"); err != nil {
		t.Fatalf("recording part 1 after the delivery: %v (part 0 must be recorded)", err)
	}
}

// When the commit of the last part with the sent mark fails, the part is
// still recorded on its own before the row is marked sent, so the
// platform's message is never sent again because of the failed mark.
func TestDeferredLastPartIsRecordedWhenTheCombinedMarkFails(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	p := &splitPlatform{fakePlatform: newFakePlatform(), failAfter: -1, deferLast: true}
	p.name = "split"
	h.g.AddPlatform(p)
	id, _ := h.st.Enqueue(ctx, store.OutboxMessage{SessionKey: "v1:split:x", Platform: "split", Kind: "api", ChatID: "x", Text: "a|b"})
	h.st.mu.Lock()
	h.st.fail["MarkSentWithPart"] = errors.New("disk hiccup")
	h.st.mu.Unlock()
	h.g.out.DeliverDue(ctx)
	h.st.mu.Lock()
	row := h.st.outbox[id-1]
	h.st.mu.Unlock()
	if row.State != store.OutboxSent || fmt.Sprint(row.SentParts) != "[pm-a pm-b]" {
		t.Fatalf("row %s parts %v; want sent with both parts recorded", row.State, row.SentParts)
	}
}
