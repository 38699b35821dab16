package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

func TestFirstWords(t *testing.T) {
	tests := []struct{ in, want string }{
		{"remember the number 42", "remember the number 42"},
		{"remember the number 42 and then tell me what it was", "remember the number 42 and then tell me…"},
		{"  two\n\tlines\r\nhere  ", "two lines here"},
		{strings.Repeat("x", 70), strings.Repeat("x", 60) + "…"},
		{"ünïcödé " + strings.Repeat("é", 70), "ünïcödé " + strings.Repeat("é", 52) + "…"},
		{"evil \u202eright-to-left\u0007 `code` here", "evil right-to-left 'code' here"},
		{"bad \xff byte", "bad byte"},
		{" \n\t ", ""},
	}
	for _, tt := range tests {
		if got := firstWords(tt.in); got != tt.want {
			t.Errorf("firstWords(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := CutOffNotice(""); got != "Your previous request was cut off by a restart; send /retry to run it again." {
		t.Errorf("CutOffNotice of no text = %q", got)
	}
	if got := CutOffNotice("remember the number 42"); !strings.Contains(got, `request "remember the number 42" was cut off`) {
		t.Errorf("CutOffNotice = %q, want it to name the message", got)
	}
}

// leaveCutOff leaves st as a crash during lane a's turn of text does.
func leaveCutOff(t *testing.T, st *fakeStore, text string) {
	t.Helper()
	ctx := context.Background()
	la, err := st.EnsureLane(ctx, laneKey(apiAddr("a")))
	if err != nil {
		t.Fatal(err)
	}
	in, _, err := st.RecordInbound(ctx, store.Inbound{Platform: "test", MessageID: "cut-1", SessionKey: laneA, Text: text})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.JournalTurn(ctx, store.JournalEntry{SessionKey: laneA, Generation: la.Generation, InboundID: in, Text: text}); err != nil {
		t.Fatal(err)
	}
}

// turnsOf counts codex's turns whose text is text.
func turnsOf(h *harness, text string) int {
	_, _, turns := h.cx.snapshot()
	n := 0
	for _, tt := range turns {
		if _, got, _ := strings.Cut(tt, ":"); got == text {
			n++
		}
	}
	return n
}

// The API lane's order of events after a restart: the cut-off notice goes
// out with the answer to the next message; /retry then reruns the cut-off
// message, not that one, and a second /retry has nothing left.
func TestRetryRerunsTheCutOffTurnAfterALaterTurn(t *testing.T) {
	st := newFakeStore()
	leaveCutOff(t, st, "cut job")
	h := newHarnessOn(t, st)
	h.start(t)
	if o := h.p.next(t); o.Text != CutOffNotice("cut job") {
		t.Fatalf("start sent %q, want the cut-off notice", o.Text)
	}
	h.send(t, "a", "m1", "later job")
	if o := h.p.replyTo(t, "m1"); o.Text != "re: later job" {
		t.Fatalf("later job answered %q", o.Text)
	}
	h.send(t, "a", "r1", "/retry")
	if o := h.p.replyTo(t, "r1"); o.Text != "re: cut job" {
		t.Errorf("/retry answered %q, want the cut-off job rerun", o.Text)
	}
	h.send(t, "a", "r2", "/retry")
	if o := h.p.replyTo(t, "r2"); o.Text != nothingToRetryNotice {
		t.Errorf("second /retry answered %q, want %q", o.Text, nothingToRetryNotice)
	}
	if cut, later := turnsOf(h, "cut job"), turnsOf(h, "later job"); cut != 1 || later != 1 {
		t.Errorf("codex ran the cut job %d and the later job %d times, want once each", cut, later)
	}
}

// A /retry sent while the rerun runs queues no second rerun: it says the
// request is already queued, and the job runs once.
func TestRetryWhileItsRerunRunsRunsItOnce(t *testing.T) {
	st := newFakeStore()
	leaveCutOff(t, st, "cut job")
	h := newHarnessOn(t, st)
	running := make(chan struct{}, 1)
	release := make(chan struct{})
	h.cx.run = func(ctx context.Context, _, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		running <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "re: " + text}, nil
	}
	h.start(t)
	h.send(t, "a", "r1", "/retry")
	select {
	case <-running:
	case <-time.After(5 * time.Second):
		t.Fatal("the rerun did not start")
	}
	h.send(t, "a", "r2", "/retry")
	if o := h.p.replyTo(t, "r2"); o.Text != alreadyQueuedNotice("cut job") {
		t.Errorf("/retry during the rerun answered %q, want %q", o.Text, alreadyQueuedNotice("cut job"))
	}
	close(release)
	if o := h.p.replyTo(t, "r1"); o.Text != "re: cut job" {
		t.Errorf("/retry answered %q", o.Text)
	}
	h.send(t, "a", "r3", "/retry")
	if o := h.p.replyTo(t, "r3"); o.Text != nothingToRetryNotice {
		t.Errorf("/retry after the rerun answered %q, want %q", o.Text, nothingToRetryNotice)
	}
	if n := turnsOf(h, "cut job"); n != 1 {
		t.Errorf("codex ran the cut job %d times, want once", n)
	}
}

// With codex.auto_retry_cut_off the start reruns the cut-off turn; that is
// its retry, so /retry afterwards has nothing to run.
func TestAutoRetriedCutOffIsNotRetriedAgain(t *testing.T) {
	st := newFakeStore()
	leaveCutOff(t, st, "cut job")
	h := newHarnessOn(t, st, func(c *Config) { c.AutoRetryCutOff = true })
	h.start(t)
	if o := h.p.replyTo(t, "cut-1"); o.Text != "re: cut job" {
		t.Fatalf("auto retry answered %q", o.Text)
	}
	h.send(t, "a", "r1", "/retry")
	if o := h.p.replyTo(t, "r1"); o.Text != nothingToRetryNotice {
		t.Errorf("/retry after the auto retry answered %q, want %q", o.Text, nothingToRetryNotice)
	}
	if n := turnsOf(h, "cut job"); n != 1 {
		t.Errorf("codex ran the cut job %d times, want once", n)
	}
	for len(h.p.out) > 0 {
		if o := <-h.p.out; strings.Contains(o.Text, "cut off") && o.Text != autoRetryNotice("cut job") {
			t.Errorf("notice %q, want it to name the cut job", o.Text)
		}
	}
}

// A timed-out turn is the turn to retry even after another turn ran; a
// rerun that times out again can be retried again.
func TestRetryRerunsTheTimedOutTurnAfterALaterTurn(t *testing.T) {
	h := newHarness(t)
	slow := 2 // the slow job's first two runs time out
	h.cx.run = func(_ context.Context, _, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		if text == "slow job" && slow > 0 {
			slow--
			return codex.TurnResult{Status: codex.TurnInterrupted, WatchdogFired: true}, nil
		}
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "re: " + text}, nil
	}
	h.start(t)
	h.send(t, "a", "m1", "slow job")
	if o := h.p.replyTo(t, "m1"); !strings.Contains(o.Text, "/retry to run it again") {
		t.Fatalf("slow job answered %q, want the timeout", o.Text)
	}
	h.send(t, "a", "m2", "later job")
	h.p.replyTo(t, "m2")
	h.send(t, "a", "r1", "/retry")
	if o := h.p.replyTo(t, "r1"); !strings.Contains(o.Text, "/retry to run it again") {
		t.Fatalf("/retry answered %q, want the slow job timed out again", o.Text)
	}
	h.send(t, "a", "r2", "/retry")
	if o := h.p.replyTo(t, "r2"); o.Text != "re: slow job" {
		t.Errorf("/retry after the rerun timed out answered %q, want the slow job", o.Text)
	}
	h.send(t, "a", "r3", "/retry")
	if o := h.p.replyTo(t, "r3"); o.Text != nothingToRetryNotice {
		t.Errorf("third /retry answered %q, want %q", o.Text, nothingToRetryNotice)
	}
	if n, later := turnsOf(h, "slow job"), turnsOf(h, "later job"); n != 3 || later != 1 {
		t.Errorf("codex ran the slow job %d times and the later job %d, want 3 and 1", n, later)
	}
}

// A /retry the store cannot answer says so and runs nothing.
func TestRetryLookupFailureRunsNothing(t *testing.T) {
	st := newFakeStore()
	leaveCutOff(t, st, "cut job")
	h := newHarnessOn(t, st)
	h.start(t)
	st.failOn("RetryTurn", store.ErrDiskFull)
	h.send(t, "a", "r1", "/retry")
	if o := h.p.replyTo(t, "r1"); o.Text != retryLookupNotice {
		t.Errorf("/retry answered %q, want %q", o.Text, retryLookupNotice)
	}
	if n := turnsOf(h, "cut job"); n != 0 {
		t.Errorf("codex ran the cut job %d times, want none", n)
	}
}
