package gateway

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway/replyspool"
	"github.com/gatewayd/gatewayd/store"
)

// errDatabaseAway is the error of a store whose database is out of reach past
// its own retries (store.Transient).
var errDatabaseAway = fmt.Errorf("store: commit turn: %w", store.ErrUnavailable)

// loggedOnce is a harness option logging through the test and a channel
// closed at the first entry with message msg.
func loggedOnce(t *testing.T, msg string) (harnessOpt, <-chan struct{}) {
	seen := make(chan struct{})
	var once sync.Once
	log := zaptest.NewLogger(t, zaptest.WrapOptions(zap.Hooks(func(e zapcore.Entry) error {
		if e.Message == msg {
			once.Do(func() { close(seen) })
		}
		return nil
	})))
	return func(c *Config) { c.Logger = log }, seen
}

func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("no %s", what)
	}
}

// A turn whose commit fails because the database is away keeps its reply
// and commits it when the database answers again: the reply goes out once,
// through the outbox (so a request held by another node gets it too), and
// the message is closed done. It is not answered "(not saved)" from memory
// with its inbound row marked failed.
func TestCommitWaitsForTheDatabase(t *testing.T) {
	opt, waiting := loggedOnce(t, "turn.commit_waiting")
	h := newHarness(t, opt)
	h.start(t)
	h.st.failOn("CommitTurn", errDatabaseAway)
	h.send(t, "a", "m1", "build it")
	waitClosed(t, waiting, "turn.commit_waiting") // the commit failed once and waits
	for drained := false; !drained; {
		select {
		case o := <-h.p.out:
			if o.InReplyTo == "m1" && o.Kind != OutPreview && o.Kind != OutProgress {
				t.Fatalf("answered %q while the database was away", o.Text)
			}
		default:
			drained = true
		}
	}
	h.st.failOn("CommitTurn", nil)
	if o := h.p.replyTo(t, "m1"); o.Text != "re: build it" {
		t.Fatalf("reply %q, want the turn's own reply", o.Text)
	}
	if s := h.st.inboundState(1); s != store.InboundDone {
		t.Errorf("inbound state %q, want done", s)
	}
	if _, _, turns := h.cx.snapshot(); len(turns) != 1 {
		t.Errorf("codex ran %v, want the one turn", turns)
	}
}

// Shutdown ends the wait: the turn stays journaled with its inbound row
// open, nothing is said from memory, and the next start tells the lane
// once that it was cut off; it never runs again by itself.
func TestCommitWaitEndsAtShutdownAndTheNextStartTellsOnce(t *testing.T) {
	st := newFakeStore()
	opt, waiting := loggedOnce(t, "turn.commit_waiting")
	first := newHarnessOn(t, st, opt)
	first.start(t)
	st.failOn("CommitTurn", errDatabaseAway)
	first.send(t, "a", "m1", "build it")
	waitClosed(t, waiting, "commit waiting for the database")
	first.stop()
	for len(first.p.out) > 0 {
		if o := <-first.p.out; o.InReplyTo == "m1" && o.Kind != OutPreview && o.Kind != OutProgress {
			t.Errorf("the first run answered %q from memory", o.Text)
		}
	}
	if s := st.inboundState(1); s == store.InboundFailed || s == store.InboundDone {
		t.Fatalf("inbound state %q after the abandoned commit, want it left open", s)
	}
	st.failOn("CommitTurn", nil)

	second := newHarnessOn(t, st)
	second.start(t)
	if o := second.p.next(t); o.Text != CutOffNotice("build it") {
		t.Fatalf("the next start sent %q, want the cut-off notice", o.Text)
	}
	second.stop()
	for len(second.p.out) > 0 {
		if o := <-second.p.out; strings.Contains(o.Text, "build it") {
			t.Errorf("the next start also sent %q", o.Text)
		}
	}
	if _, _, turns := second.cx.snapshot(); len(turns) != 0 {
		t.Errorf("the next start ran %v, want the cut-off turn told, not rerun", turns)
	}
	if s := st.inboundState(1); s == store.InboundProcessing || s == store.InboundReceived {
		t.Errorf("inbound state %q after the next start, want it closed", s)
	}
}

// Rows claimed for a lane whose row cannot be read now (the database
// away) go back to the inbox as received, in order, for the next claim:
// not closed failed, which lost the messages; and a cut-off turn found at
// a takeover then is left to be told later instead of dropped.
func TestClaimedRowsGoBackWhenTheDatabaseIsAway(t *testing.T) {
	h := newHarness(t)
	gate := &fakeGate{serving: map[string]bool{}}
	h.g.SetLaneGate(gate)
	h.start(t)
	ctx := context.Background()
	key := apiAddr("l1").SessionKey()
	h.send(t, "l1", "m1", "first")
	h.send(t, "l1", "m2", "second")
	for id := int64(1); id <= 2; id++ {
		if err := h.st.SetInboundState(ctx, id, store.InboundProcessing); err != nil { // the claim
			t.Fatal(err)
		}
	}
	rows, err := h.st.PendingInbound(ctx)
	if err != nil || len(rows) != 2 {
		t.Fatalf("pending %v, %v", rows, err)
	}
	gate.mu.Lock()
	gate.serving[key] = true
	gate.mu.Unlock()

	sl, err := h.st.Lane(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	h.st.failOn("Lane", errDatabaseAway)
	h.g.Cluster().DispatchClaimed(ctx, rows)
	for id := int64(1); id <= 2; id++ {
		if s := h.st.inboundState(id); s != store.InboundReceived {
			t.Errorf("row %d: %q after a claim the database could not serve, want received", id, s)
		}
	}

	// A takeover that finds the lane's cut-off turn while the database
	// is away fails its recovery, and tells the turn once the database
	// answers, at the next attempt (its node runs it again in place).
	if err := h.st.JournalTurn(ctx, store.JournalEntry{SessionKey: key, Generation: sl.Generation, InboundID: 1, Text: "first"}); err != nil {
		t.Fatal(err)
	}
	if err := h.st.SetInboundState(ctx, 1, store.InboundProcessing); err != nil {
		t.Fatal(err)
	}
	if err := h.g.Cluster().RecoverLane(ctx, key); !store.Transient(err) {
		t.Fatalf("recovery with the database away: %v, want a transient failure", err)
	}
	if s := h.st.inboundState(1); s != store.InboundProcessing {
		t.Errorf("cut-off row %q after a takeover with the database away, want it left for the next", s)
	}
	h.st.failOn("Lane", nil)
	if err := h.g.Cluster().RecoverLane(ctx, key); err != nil {
		t.Fatal(err)
	}
	if o := h.p.next(t); o.Text != CutOffNotice("first") {
		t.Fatalf("sent %q, want the cut-off notice", o.Text)
	}
	if _, _, turns := h.cx.snapshot(); len(turns) != 0 {
		t.Errorf("codex ran %v", turns)
	}
}

// A takeover's recovery that cannot tell the lane's cut-off turn now (its
// lane unreadable, then its mark unwritten: the database away) fails
// before the row queued behind it runs, so the node's next attempt tells
// the turn first and runs the row once, after it. It used to report
// success: the turn stayed untold, its row processing, while the node kept
// the lane, and the queued row ran first.
func TestRecoverLaneFailsUntilTheCutOffTurnIsTold(t *testing.T) {
	h := newHarness(t)
	h.g.SetLaneGate(&fakeGate{serving: map[string]bool{apiAddr("l1").SessionKey(): true}})
	h.start(t)
	ctx := context.Background()
	key := apiAddr("l1").SessionKey()
	h.send(t, "l1", "m1", "first")
	h.send(t, "l1", "m2", "second")
	for id := int64(1); id <= 2; id++ {
		if err := h.st.SetInboundState(ctx, id, store.InboundProcessing); err != nil { // the dead owner's claim
			t.Fatal(err)
		}
	}
	sl, err := h.st.Lane(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.st.JournalTurn(ctx, store.JournalEntry{SessionKey: key, Generation: sl.Generation, InboundID: 1, Text: "first"}); err != nil {
		t.Fatal(err)
	}

	for _, method := range []string{"Lane", "MarkCutOff"} {
		h.st.failOn(method, errDatabaseAway)
		if err := h.g.Cluster().RecoverLane(ctx, key); !store.Transient(err) {
			t.Fatalf("recovery with %s failing: %v, want a transient failure", method, err)
		}
		h.st.failOn(method, nil)
		if _, _, turns := h.cx.snapshot(); len(turns) != 0 {
			t.Fatalf("with %s failing the recovery ran %v, want nothing before the cut-off turn is told", method, turns)
		}
		for id := int64(1); id <= 2; id++ {
			if s := h.st.inboundState(id); s != store.InboundProcessing {
				t.Errorf("with %s failing row %d is %q, want it left processing for the next attempt", method, id, s)
			}
		}
	}
	if err := h.g.Cluster().RecoverLane(ctx, key); err != nil {
		t.Fatal(err)
	}
	if o := h.p.next(t); o.Text != CutOffNotice("first") {
		t.Fatalf("sent %q, want the cut-off notice first", o.Text)
	}
	if o := h.p.next(t); o.Text != "re: second" {
		t.Fatalf("sent %q, want the queued message's answer", o.Text)
	}
	if _, _, turns := h.cx.snapshot(); len(turns) != 1 {
		t.Errorf("codex ran %v, want the queued message once", turns)
	}
}

// With the reply spool, a process stopped while its commit waits for the
// database (shutdown here; kill -9 leaves the same rows and file) loses no
// answer: the next start commits the spooled turn and sends its reply
// once, and the lane is not told the turn was cut off.
func TestSpooledReplyIsDeliveredOnceByTheNextStart(t *testing.T) {
	st := newFakeStore()
	spool := replyspool.New(t.TempDir(), nil)
	withSpool := func(c *Config) { c.Replies = spool }
	opt, waiting := loggedOnce(t, "turn.commit_waiting")
	first := newHarnessOn(t, st, opt, withSpool)
	first.start(t)
	st.failOn("CommitTurn", errDatabaseAway)
	first.send(t, "a", "m1", "build it")
	waitClosed(t, waiting, "commit waiting for the database")
	first.stop()
	if turns, err := spool.Pending(""); err != nil || len(turns) != 1 || turns[0].AssistantText != "re: build it" {
		t.Fatalf("spooled %+v, %v; want the waiting turn", turns, err)
	}
	st.failOn("CommitTurn", nil)

	second := newHarnessOn(t, st, withSpool)
	second.start(t)
	if o := second.p.replyTo(t, "m1"); o.Text != "re: build it" {
		t.Fatalf("the next start sent %q, want the turn's own reply", o.Text)
	}
	second.stop()
	for len(second.p.out) > 0 {
		if o := <-second.p.out; strings.Contains(o.Text, "build it") {
			t.Errorf("the next start also sent %q", o.Text)
		}
	}
	if s := st.inboundState(1); s != store.InboundDone {
		t.Errorf("inbound state %q, want done", s)
	}
	if _, _, turns := second.cx.snapshot(); len(turns) != 0 {
		t.Errorf("the next start ran %v, want the spooled turn committed, not rerun", turns)
	}
	if turns, _ := spool.Pending(""); len(turns) != 0 {
		t.Errorf("still spooled after the commit: %+v", turns)
	}
}
