package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/gatewayd/gatewayd/gateway/feature/compact"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// collect reads outbounds until every id in ids has its (non-preview)
// answer; it returns the answers by id and the lane notices seen meanwhile.
func collect(t *testing.T, p *fakePlatform, ids ...string) (map[string]Outbound, []string) {
	t.Helper()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	got := map[string]Outbound{}
	var notices []string
	for len(got) < len(want) {
		o := p.next(t)
		switch {
		case o.Kind == OutPreview:
		case o.InReplyTo == "":
			notices = append(notices, o.Text)
		case want[o.InReplyTo]:
			got[o.InReplyTo] = o
		}
	}
	return got, notices
}

func withBusy(mode string) harnessOpt { return func(c *Config) { c.BusyMode = mode } }

func TestBusyModeValidation(t *testing.T) {
	for _, mode := range []string{"", BusyQueue, BusyInterrupt, BusySteer} {
		if _, err := New(Config{BusyMode: mode}.WithDefaults(), newFakeStore(), newFakeCodex()); err != nil {
			t.Errorf("mode %q: %v", mode, err)
		}
	}
	if _, err := New(Config{BusyMode: "shout"}.WithDefaults(), newFakeStore(), newFakeCodex()); err == nil {
		t.Error("unknown busy mode accepted")
	}
}

// interruptible runs "slow" until its thread is interrupted (then it ends
// interrupted with its partial text); other texts answer at once.
type interruptible struct {
	cx      *fakeCodex
	entered chan string
	// burst, when set, holds the interrupted turn's end until it is
	// closed, so the messages sent meanwhile all wait behind it.
	burst chan struct{}
}

func (r *interruptible) run(ctx context.Context, thread, text string, ev codex.TurnEvents) (codex.TurnResult, error) {
	r.entered <- text
	if text != "slow" {
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "re: " + text}, nil
	}
	ev.Delta("partial answer")
	select {
	case <-r.cx.interr:
		if r.burst != nil {
			<-r.burst
		}
		return codex.TurnResult{Status: codex.TurnInterrupted, Text: "partial answer"}, nil
	case <-ctx.Done():
		return codex.TurnResult{}, ctx.Err()
	}
}

func TestBusyInterruptBurst(t *testing.T) {
	h := newHarness(t, withBusy(BusyInterrupt))
	r := &interruptible{cx: h.cx, entered: make(chan string, 16), burst: make(chan struct{})}
	h.cx.run = r.run
	h.start(t)
	h.send(t, "a", "m1", "slow")
	if e := <-r.entered; e != "slow" {
		t.Fatalf("first turn %q", e)
	}
	// A burst while the slow turn runs: the first message interrupts it,
	// all three run after it, in order. The interrupted turn ends only
	// after the burst is in, so the three are one burst whatever the
	// scheduling (an instant turn between two of them would start a new
	// one, told again).
	h.send(t, "a", "m2", "two")
	h.send(t, "a", "m3", "three")
	h.send(t, "a", "m4", "four")
	close(r.burst)
	got, notices := collect(t, h.p, "m1", "m2", "m3", "m4")
	if o := got["m1"]; o.Text != "partial answer\n\n"+interruptedSuffix || o.Turn == nil || o.Turn.Status != statusInterrupted {
		t.Errorf("interrupted turn answered %q (%+v)", o.Text, o.Turn)
	}
	for id, text := range map[string]string{"m2": "two", "m3": "three", "m4": "four"} {
		if o := got[id]; o.Text != "re: "+text || o.Turn == nil || o.Turn.Status != statusCompleted {
			t.Errorf("%s answered %q", id, o.Text)
		}
	}
	order := []string{<-r.entered, <-r.entered, <-r.entered}
	if fmt.Sprint(order) != "[two three four]" {
		t.Errorf("after the interrupt ran %v, want [two three four]", order)
	}
	told := 0
	for _, n := range notices {
		if n == interruptedNotice {
			told++
		}
	}
	if told != 1 {
		t.Errorf("notices %q, want the interrupt notice once per burst", notices)
	}
	if user, assistant := h.st.rows("v1:test:a"); user != 4 || assistant != 4 {
		t.Errorf("transcript %d user / %d assistant rows, want 4 / 4", user, assistant)
	}
}

func TestBusyInterruptBeforeTurnStarts(t *testing.T) {
	h := newHarness(t, withBusy(BusyInterrupt))
	entered := make(chan struct{})
	release := make(chan struct{})
	first := true
	h.cx.ensureFn = func(stored string) (codex.Ensured, error) { // runs under h.cx.mu
		if !first {
			return codex.Ensured{ThreadID: stored, Outcome: codex.OutcomeLoaded}, nil
		}
		first = false
		close(entered)
		<-release // the first message is still loading its thread
		return codex.Ensured{ThreadID: h.cx.newThread(), Outcome: codex.OutcomeStarted}, nil
	}
	h.start(t)
	h.send(t, "a", "m1", "one")
	<-entered
	h.send(t, "a", "m2", "two")
	close(release)
	got, _ := collect(t, h.p, "m1", "m2")
	if got["m1"].Text != interruptedSuffix || got["m2"].Text != "re: two" {
		t.Errorf("answers %q / %q, want m1 interrupted before it ran and m2 answered", got["m1"].Text, got["m2"].Text)
	}
	if _, _, turns := h.cx.snapshot(); len(turns) != 1 || turns[0] != "t1:two" {
		t.Errorf("codex turns %v, want only the second message", turns)
	}
}

// steerable is a turn that takes steered input until released.
type steerable struct {
	mu      sync.Mutex
	active  bool
	steered []string
	entered chan string
	release chan struct{}
}

func (s *steerable) steer(_, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.active {
		return fmt.Errorf("turn/steer: %w", codex.ErrNoActiveTurn)
	}
	s.steered = append(s.steered, text)
	return nil
}

func (s *steerable) run(ctx context.Context, _, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
	s.mu.Lock()
	s.active = true
	s.mu.Unlock()
	s.entered <- text
	select {
	case <-s.release:
	case <-ctx.Done():
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active = false
	return codex.TurnResult{Status: codex.TurnCompleted, Text: "answer to " + strings.Join(append([]string{text}, s.steered...), "+")}, nil
}

func TestBusySteerBurstRecordsEachMessageOnce(t *testing.T) {
	h := newHarness(t, withBusy(BusySteer))
	s := &steerable{entered: make(chan string, 8), release: make(chan struct{})}
	h.cx.run, h.cx.steerFn = s.run, s.steer
	h.start(t)
	h.send(t, "a", "m1", "one")
	<-s.entered
	h.send(t, "a", "m2", "two")
	h.send(t, "a", "m3", "three")
	steered, _ := collect(t, h.p, "m2", "m3")
	for id, o := range steered {
		if o.Text != steeredNotice {
			t.Errorf("%s answered %q, want %q", id, o.Text, steeredNotice)
		}
	}
	close(s.release)
	got, _ := collect(t, h.p, "m1")
	if got["m1"].Text != "answer to one+two+three" {
		t.Errorf("steered turn answered %q", got["m1"].Text)
	}
	// After the turn ended, steering is refused: the next message queues
	// and runs as its own turn.
	s.release = make(chan struct{})
	close(s.release)
	h.send(t, "a", "m4", "four")
	if o := h.p.replyTo(t, "m4"); o.Text != "answer to four+two+three" {
		t.Errorf("message after the turn answered %q", o.Text)
	}
	if _, _, turns := h.cx.snapshot(); len(turns) != 2 {
		t.Errorf("codex turns %v, want 2 (the steered messages joined the first)", turns)
	}
	msgs, _ := h.st.Transcript(context.Background(), "v1:test:a", 100)
	var rows []string
	for _, m := range msgs {
		rows = append(rows, m.Role+":"+m.Text)
	}
	want := "[user:one user:two user:three assistant:answer to one+two+three user:four assistant:answer to four+two+three]"
	if fmt.Sprint(rows) != want {
		t.Errorf("transcript %v\nwant %s", rows, want)
	}
	for id := int64(1); id <= 4; id++ {
		if st := h.st.inboundState(id); st != store.InboundDone {
			t.Errorf("inbound %d state %q, want done", id, st)
		}
	}
}

func TestBusySteerDuringCompactionQueues(t *testing.T) {
	h := newHarness(t, withBusy(BusySteer)).compacting(t, compact.Config{At: 0.5})
	var high atomic.Bool
	h.cx.usageFn = func(string) (codex.Usage, bool) {
		if high.Load() {
			return codex.Usage{LastTotalTokens: 900, ContextWindow: 1000}, true
		}
		return codex.Usage{LastTotalTokens: 10, ContextWindow: 1000}, true
	}
	compacting, release := make(chan struct{}), make(chan struct{})
	h.cx.compactFn = func(string) (codex.Usage, codex.Usage, error) {
		close(compacting)
		<-release
		return codex.Usage{LastTotalTokens: 900}, codex.Usage{LastTotalTokens: 100}, nil
	}
	steered := 0
	h.cx.steerFn = func(string, string) error { steered++; return nil }
	h.start(t)
	h.send(t, "a", "m1", "one")
	collect(t, h.p, "m1")
	high.Store(true)
	h.send(t, "a", "m2", "two")
	<-compacting
	h.send(t, "a", "m3", "three") // must not be steered into the compaction
	close(release)
	got, _ := collect(t, h.p, "m2", "m3")
	if got["m2"].Text != "re: two" || got["m3"].Text != "re: three" || steered != 0 {
		t.Errorf("answers %q / %q, steered %d; want both as own turns", got["m2"].Text, got["m3"].Text, steered)
	}
}
