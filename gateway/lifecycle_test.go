package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

const laneA = "v1:test:a"

func TestExactlyOnceAfterNTurns(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	const n = 5
	for i := range n {
		id := fmt.Sprintf("m%d", i)
		h.send(t, "a", id, fmt.Sprintf("question %d", i))
		// The platform redelivers every message once: answered once.
		dup, err := h.g.Deliver(context.Background(), Inbound{Address: apiAddr("a"), MessageID: id, Text: "again"})
		if err != nil || !dup {
			t.Fatalf("redelivery of %s: dup=%v err=%v, want duplicate", id, dup, err)
		}
		if o := h.p.replyTo(t, id); o.Turn == nil || o.Turn.Status != "completed" {
			t.Fatalf("reply %s = %+v, want a completed turn", id, o)
		}
	}
	if u, a := h.st.rows(laneA); u != n || a != n {
		t.Errorf("transcript has %d user + %d assistant rows, want %d + %d (the echoed userMessage item is not stored)", u, a, n, n)
	}
	if l := h.st.lane(laneA); l.Binding != store.BindingConfirmed || l.ThreadID != "t1" {
		t.Errorf("lane binding %q thread %q, want confirmed t1", l.Binding, l.ThreadID)
	}
	if _, _, turns := h.cx.snapshot(); len(turns) != n {
		t.Errorf("codex ran %d turns, want %d", len(turns), n)
	}
	select {
	case o := <-h.p.out:
		t.Errorf("unexpected extra outbound %+v", o)
	default:
	}
}

func TestStoreFailures(t *testing.T) {
	tests := []struct {
		name      string
		method    string
		wantErr   bool   // Deliver itself fails (nothing recorded, platform must not ack)
		wantReply string // substring of the answer, "" when none
		wantTurns int
	}{
		{name: "inbox", method: "RecordInbound", wantErr: true},
		{name: "lane row", method: "EnsureLane", wantErr: true},
		// On an idle lane the journal entry is written with the inbox row.
		{name: "journal", method: "JournalTurn", wantErr: true},
		{name: "binding", method: "BindThread", wantReply: "could not save", wantTurns: 0},
		{name: "commit", method: "CommitTurn", wantReply: "not saved", wantTurns: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.start(t)
			h.st.failOn(tt.method, errInjected)
			_, err := h.g.Deliver(context.Background(), Inbound{Address: apiAddr("a"), MessageID: "m1", Text: "hi"})
			if (err != nil) != tt.wantErr {
				t.Fatalf("Deliver err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				if _, _, turns := h.cx.snapshot(); len(turns) != 0 {
					t.Errorf("codex ran %v after a failed inbox write", turns)
				}
				return
			}
			if o := h.p.replyTo(t, "m1"); !strings.Contains(o.Text, tt.wantReply) {
				t.Errorf("reply %q, want it to contain %q", o.Text, tt.wantReply)
			}
			if _, _, turns := h.cx.snapshot(); len(turns) != tt.wantTurns {
				t.Errorf("codex turns = %v, want %d", turns, tt.wantTurns)
			}
			if strings.Contains(fmt.Sprint(h.p.out), errInjected.Error()) {
				t.Error("raw store error leaked to the user")
			}
			h.st.failOn(tt.method, nil)
			h.send(t, "a", "m2", "again")
			if o := h.p.replyTo(t, "m2"); o.Text != "re: again" {
				t.Errorf("after recovery reply = %q", o.Text)
			}
		})
	}
}

// A message that waited behind a running turn is journaled when its own
// turn starts; a failure there answers "could not save" and runs nothing.
func TestQueuedTurnJournalFailure(t *testing.T) {
	h := newHarness(t)
	entered, release := make(chan string, 4), make(chan struct{})
	h.cx.run = func(_ context.Context, _, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		entered <- text
		if text == "slow" {
			<-release
		}
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "re: " + text}, nil
	}
	h.start(t)
	h.send(t, "a", "m1", "slow")
	<-entered
	h.send(t, "a", "m2", "hi") // queued: recorded without a journal entry
	h.st.failOn("JournalTurn", errInjected)
	close(release)
	if o := h.p.replyTo(t, "m1"); o.Text != "re: slow" {
		t.Errorf("first reply %q", o.Text)
	}
	if o := h.p.replyTo(t, "m2"); !strings.Contains(o.Text, "could not save") {
		t.Errorf("reply %q, want it to contain %q", o.Text, "could not save")
	}
	if _, _, turns := h.cx.snapshot(); len(turns) != 1 {
		t.Errorf("codex turns = %v, want only the first", turns)
	}
	h.st.failOn("JournalTurn", nil)
	h.send(t, "a", "m3", "again")
	if o := h.p.replyTo(t, "m3"); o.Text != "re: again" {
		t.Errorf("after recovery reply = %q", o.Text)
	}
}

func TestResumeRefusedNotifiesExactlyOnce(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	l, _ := h.st.EnsureLane(ctx, laneKey(apiAddr("a")))
	if err := h.st.BindThread(ctx, laneA, l.Generation, "gone"); err != nil {
		t.Fatal(err)
	}
	h.start(t)
	h.send(t, "a", "m1", "hello")
	notice := h.p.next(t)
	if notice.Text != ReplacedNotice {
		t.Fatalf("first outbound %q, want the replaced notice", notice.Text)
	}
	if o := h.p.replyTo(t, "m1"); o.Text != "re: hello" {
		t.Fatalf("reply = %q", o.Text)
	}
	h.send(t, "a", "m2", "again")
	if o := h.p.next(t); o.InReplyTo != "m2" {
		t.Fatalf("second turn sent %+v before its reply; want no second notice", o)
	}
	h.st.mu.Lock()
	bindings := fmt.Sprint(h.st.bindings)
	h.st.mu.Unlock()
	if bindings != "[bind:gone lost:gone bind:t1]" {
		t.Errorf("binding history %s, want the lost mark before the new binding", bindings)
	}
}

func TestStaleWriterFailsWithoutReplacing(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	l, _ := h.st.EnsureLane(ctx, laneKey(apiAddr("a")))
	_ = h.st.BindThread(ctx, laneA, l.Generation, "busy")
	h.cx.ensureFn = func(string) (codex.Ensured, error) {
		return codex.Ensured{}, fmt.Errorf("thread/resume: %w", codex.ErrStaleWriter)
	}
	h.start(t)
	h.send(t, "a", "m1", "hello")
	if o := h.p.replyTo(t, "m1"); o.Text != staleWriterNotice {
		t.Errorf("reply %q, want the stale writer notice", o.Text)
	}
	if l := h.st.lane(laneA); l.ThreadID != "busy" || l.Binding != store.BindingPending {
		t.Errorf("lane thread %q binding %q, want the stored thread kept", l.ThreadID, l.Binding)
	}
}

func TestTurnOutcomes(t *testing.T) {
	tests := []struct {
		name        string
		res         codex.TurnResult
		err         error
		wantText    string
		wantBinding store.Binding
	}{
		{name: "failed", res: codex.TurnResult{Status: codex.TurnFailed, Error: &codex.TurnError{Message: "model overloaded\ndetails"}},
			wantText: "Codex turn failed: model overloaded", wantBinding: store.BindingPending},
		{name: "interrupted keeps partial", res: codex.TurnResult{Status: codex.TurnInterrupted, Text: "half an ans"},
			wantText: "half an ans\n\n(interrupted)", wantBinding: store.BindingPending},
		{name: "process died", err: fmt.Errorf("turn: %w", codex.ErrProcessDied),
			wantText: "Codex turn failed: the Codex process stopped", wantBinding: store.BindingPending},
		{name: "completed confirms", res: codex.TurnResult{Status: codex.TurnCompleted, Text: "done"},
			wantText: "done", wantBinding: store.BindingConfirmed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.cx.run = func(context.Context, string, string, codex.TurnEvents) (codex.TurnResult, error) {
				return tt.res, tt.err
			}
			h.start(t)
			h.send(t, "a", "m1", "hello")
			if o := h.p.replyTo(t, "m1"); !strings.HasPrefix(o.Text, tt.wantText) {
				t.Errorf("reply %q, want prefix %q", o.Text, tt.wantText)
			}
			if l := h.st.lane(laneA); l.Binding != tt.wantBinding {
				t.Errorf("binding %q, want %q", l.Binding, tt.wantBinding)
			}
			if u, a := h.st.rows(laneA); u != 1 || a != 1 {
				t.Errorf("rows %d user %d assistant, want 1+1", u, a)
			}
		})
	}
}

func TestThreadNotLoadedReensuresOnce(t *testing.T) {
	h := newHarness(t)
	first := true
	h.cx.ensureFn = func(stored string) (codex.Ensured, error) {
		if first { // claim loaded although the app-server forgot it
			first = false
			h.cx.known["t9"] = true
			return codex.Ensured{ThreadID: "t9", Outcome: codex.OutcomeStarted}, nil
		}
		h.cx.loaded[stored] = true
		return codex.Ensured{ThreadID: stored, Outcome: codex.OutcomeResumed}, nil
	}
	h.start(t)
	h.send(t, "a", "m1", "hello")
	if o := h.p.replyTo(t, "m1"); o.Text != "re: hello" {
		t.Errorf("reply %q", o.Text)
	}
	ensures, _, _ := h.cx.snapshot()
	if fmt.Sprint(ensures) != "[ t9]" {
		t.Errorf("ensure calls %q, want a start then one re-ensure of t9", ensures)
	}
}

func TestResetDuringTurnDiscardsLateResult(t *testing.T) {
	h := newHarness(t)
	gt := newGate()
	h.cx.run = gt.run
	h.start(t)
	h.send(t, "a", "m1", "long job")
	<-gt.entered
	h.send(t, "a", "m2", "queued behind") // dropped by /new
	h.send(t, "a", "r1", "/new")
	select {
	case th := <-h.cx.interr:
		if th != "t1" {
			t.Errorf("interrupted %q, want t1", th)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("/new did not interrupt the running turn")
	}
	gt.open("long job") // the late result arrives after the reset
	seen := map[string]string{}
	for len(seen) < 3 {
		o := h.p.next(t)
		if o.InReplyTo != "" {
			seen[o.InReplyTo] = o.Text
		}
	}
	if seen["m1"] != cancelledNotice || seen["m2"] != cancelledNotice {
		t.Errorf("answers %v: the late result and the dropped message must be cancelled", seen)
	}
	if !strings.Contains(seen["r1"], "new conversation") {
		t.Errorf("/new answered %q", seen["r1"])
	}
	l := h.st.lane(laneA)
	if l.ThreadID != "" || l.Binding != store.BindingNone || l.Generation != 2 {
		t.Errorf("after reset lane thread %q binding %q gen %d: the old binding was resurrected", l.ThreadID, l.Binding, l.Generation)
	}
	waitFor(t, "old thread released", func() bool {
		_, rel, _ := h.cx.snapshot()
		return fmt.Sprint(rel) == "[t1]"
	})
	h.send(t, "a", "m3", "fresh")
	gt.open("fresh")
	if o := h.p.replyTo(t, "m3"); o.Turn == nil || o.Turn.ThreadID != "t2" {
		t.Errorf("after /new reply %+v, want a new thread t2", o)
	}
}

func TestStopInterruptsAndKeepsThread(t *testing.T) {
	h := newHarness(t)
	stopped := make(chan struct{})
	h.cx.run = func(ctx context.Context, _, _ string, ev codex.TurnEvents) (codex.TurnResult, error) {
		<-stopped
		return codex.TurnResult{Status: codex.TurnInterrupted, Text: "partial"}, nil
	}
	h.start(t)
	h.send(t, "a", "m1", "work")
	waitFor(t, "turn running", func() bool { return h.g.Stats().RunningTurns == 1 })
	waitFor(t, "thread known", func() bool { return h.g.lanes.lookup(laneA) != nil && h.curThread(laneA) != "" })
	h.send(t, "a", "s1", "/stop")
	<-h.cx.interr
	close(stopped)
	if o := h.p.replyTo(t, "s1"); !strings.Contains(o.Text, "Stopping") {
		t.Errorf("/stop answered %q", o.Text)
	}
	if o := h.p.replyTo(t, "m1"); o.Text != "partial\n\n(interrupted)" {
		t.Errorf("interrupted reply %q", o.Text)
	}
	if l := h.st.lane(laneA); l.ThreadID != "t1" {
		t.Errorf("thread %q after /stop, want t1 kept", l.ThreadID)
	}
}

func (h *harness) curThread(key string) string {
	l := h.g.lanes.lookup(key)
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cur == nil {
		return ""
	}
	return l.cur.threadID
}

func TestStatusHelpAndUnknownCommand(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	h.send(t, "a", "m1", "hello")
	h.p.replyTo(t, "m1")
	h.send(t, "a", "s1", "/status@bot")
	st := h.p.replyTo(t, "s1").Text
	for _, want := range []string{laneA, "t1 (confirmed)", "1 turns", "1200 / 200000", "0 waiting"} {
		if !strings.Contains(st, want) {
			t.Errorf("/status %q lacks %q", st, want)
		}
	}
	h.send(t, "a", "h1", "/help")
	if o := h.p.replyTo(t, "h1"); !strings.Contains(o.Text, "/retry") {
		t.Errorf("/help %q", o.Text)
	}
	h.send(t, "a", "u1", "/deploy now")
	if o := h.p.replyTo(t, "u1"); o.Text != "re: /deploy now" {
		t.Errorf("unknown command reply %q, want it passed to codex", o.Text)
	}
}

// TestRetryWithNothingCutOffRunsNothing: a lane whose turns all finished
// has nothing to retry; /retry says so and codex gets no turn (it used to
// rerun the last message).
func TestRetryWithNothingCutOffRunsNothing(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	h.send(t, "a", "m1", "compute")
	h.p.replyTo(t, "m1")
	h.send(t, "a", "r1", "/retry")
	if o := h.p.replyTo(t, "r1"); !strings.HasPrefix(o.Text, "Nothing to retry") {
		t.Errorf("/retry reply %q, want Nothing to retry", o.Text)
	}
	if _, _, turns := h.cx.snapshot(); len(turns) != 1 {
		t.Errorf("codex turns %v, want only the message's", turns)
	}
}

func TestCompact(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	h.send(t, "a", "c0", "/compact")
	if o := h.p.replyTo(t, "c0"); !strings.Contains(o.Text, "Nothing to compact") {
		t.Errorf("compact without thread: %q", o.Text)
	}
	h.send(t, "a", "m1", "hello")
	h.p.replyTo(t, "m1")
	h.send(t, "a", "c1", "/compact")
	if o := h.p.replyTo(t, "c1"); o.Text != "Compacted: context 100 → 10 tokens." {
		t.Errorf("compact: %q", o.Text)
	}
}

func TestOperatorResetAndShutdown(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	h.send(t, "a", "m1", "hello")
	h.p.replyTo(t, "m1")
	waitFor(t, "lane idle", func() bool { return h.laneIdle(laneA) })
	if err := h.g.ResetLane(context.Background(), laneA); err != nil {
		t.Fatal(err)
	}
	if o := h.p.next(t); !strings.Contains(o.Text, "new conversation") {
		t.Errorf("operator reset told the lane %q", o.Text)
	}
	if l := h.st.lane(laneA); l.Generation != 2 || l.ThreadID != "" {
		t.Errorf("after ResetLane gen %d thread %q", l.Generation, l.ThreadID)
	}
	if err := h.g.ResetLane(context.Background(), "v1:test:nope"); err == nil {
		t.Error("ResetLane of an unknown lane succeeded")
	}
	if _, err := h.g.Deliver(context.Background(), Inbound{Address: apiAddr("a"), Text: "no id"}); err == nil {
		t.Error("Deliver accepted a message without an id")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := h.g.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := h.g.Deliver(ctx, Inbound{Address: apiAddr("a"), MessageID: "x", Text: "late"}); !errors.Is(err, ErrShuttingDown) {
		t.Errorf("Deliver after Shutdown = %v", err)
	}
}

func TestLostBindingFromInterruptedReplacementIsAnnounced(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	l, _ := h.st.EnsureLane(ctx, laneKey(apiAddr("a")))
	_ = h.st.BindThread(ctx, laneA, l.Generation, "old")
	_ = h.st.MarkBindingLost(ctx, laneA, l.Generation, "old", "no rollout found")
	h.start(t)
	h.send(t, "a", "m1", "hello")
	if o := h.p.next(t); o.Text != ReplacedNotice {
		t.Fatalf("first outbound %q, want the replaced notice", o.Text)
	}
	if o := h.p.replyTo(t, "m1"); o.Turn == nil || o.Turn.ThreadID != "t1" {
		t.Errorf("reply %+v, want a new thread", o)
	}
	if ensures, _, _ := h.cx.snapshot(); ensures[0] != "" {
		t.Errorf("ensure asked for %q; a lost thread must not be resumed", ensures[0])
	}
}
