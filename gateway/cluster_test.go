package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// fakeGate is a LaneGate whose ownership the test sets.
type fakeGate struct {
	mu        sync.Mutex
	serving   map[string]bool
	recorded  []string
	committed []string
}

func (f *fakeGate) Recorded(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recorded = append(f.recorded, key)
}

func (f *fakeGate) Serves(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.serving[key]
}

// OwnedLanes lists the lanes the gate serves.
func (f *fakeGate) OwnedLanes() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var keys []string
	for k, ok := range f.serving {
		if ok {
			keys = append(keys, k)
		}
	}
	return keys
}

func (f *fakeGate) TurnCommitted(key, _ string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.committed = append(f.committed, key)
}

func (f *fakeGate) snapshot() (recorded, committed []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.recorded), slices.Clone(f.committed)
}

// In cluster mode a delivered message is recorded and left in the shared
// inbox (the gate is told, nothing runs); once claimed and handed to
// DispatchClaimed it runs, its reply is delivered because this node serves
// the lane, and the gate hears of the committed turn for shipping.
func TestLaneGateRecordsThenRunsOnlyClaimedRows(t *testing.T) {
	h := newHarness(t)
	gate := &fakeGate{serving: map[string]bool{}}
	h.g.SetLaneGate(gate)
	h.start(t)
	key := apiAddr("l1").SessionKey()

	h.send(t, "l1", "m1", "hello")
	if rec, _ := gate.snapshot(); !slices.Equal(rec, []string{key}) {
		t.Fatalf("gate told of %v, want [%s]", rec, key)
	}
	if _, _, turns := h.cx.snapshot(); len(turns) != 0 {
		t.Fatalf("a turn ran before any claim: %v", turns)
	}
	rows, err := h.st.PendingInbound(context.Background())
	if err != nil || len(rows) != 1 || rows[0].MessageID != "m1" {
		t.Fatalf("pending inbound = %+v, %v; want m1 left for the owner", rows, err)
	}

	gate.mu.Lock()
	gate.serving[key] = true
	gate.mu.Unlock()
	h.g.Cluster().DispatchClaimed(context.Background(), rows)
	if got := h.p.replyTo(t, "m1"); got.Text == "" {
		t.Fatalf("empty reply %+v", got)
	}
	waitFor(t, "the committed turn reported", func() bool {
		_, committed := gate.snapshot()
		return slices.Equal(committed, []string{key})
	})
}

// A lane this node does not serve (lost, or another node's) gets no
// delivery from here: its outbox rows stay pending for the owner.
func TestLaneGateDeliversOnlyServedLanes(t *testing.T) {
	h := newHarness(t)
	gate := &fakeGate{serving: map[string]bool{apiAddr("mine").SessionKey(): true}}
	h.g.SetLaneGate(gate)
	h.start(t)
	ctx := context.Background()
	enqueue := func(lane, text string) {
		t.Helper()
		a := apiAddr(lane)
		if _, err := h.st.Enqueue(ctx, store.OutboxMessage{SessionKey: a.SessionKey(), Platform: a.Platform,
			Kind: string(a.Kind), ChatID: a.ChatID, Text: text, OutKind: store.OutboxReply}); err != nil {
			t.Fatal(err)
		}
		h.g.out.Poke()
	}
	enqueue("theirs", "to theirs")
	enqueue("mine", "to mine")
	if got := h.p.next(t); got.Text != "to mine" {
		t.Fatalf("delivered %q, want only the served lane's row", got.Text)
	}
	// The pass that delivers a later row of ours sees theirs again and
	// leaves it.
	enqueue("mine", "to mine again")
	if got := h.p.next(t); got.Text != "to mine again" {
		t.Fatalf("delivered %q, want the served lane's second row", got.Text)
	}
	select {
	case o := <-h.p.out:
		t.Fatalf("delivered %q for a lane this node does not serve", o.Text)
	default:
	}
}

// claimAndRun hands the lane's pending rows to DispatchClaimed, as the
// node does with the rows it claimed.
func claimAndRun(t *testing.T, h *harness) {
	t.Helper()
	rows, err := h.st.PendingInbound(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h.g.Cluster().DispatchClaimed(context.Background(), rows)
}

// RestoreThread unloads the lane's loaded thread from the app-server
// before the node's restore runs, so the lane's next turn resumes the
// thread (codex reads the restored rollout) instead of finding it loaded
// with the history it had. A lane with a turn of its own running is left
// alone: nothing unloaded, no restore.
func TestRestoreThreadUnloadsTheThreadBeforeTheRestore(t *testing.T) {
	h := newHarness(t)
	key := apiAddr("l1").SessionKey()
	h.g.SetLaneGate(&fakeGate{serving: map[string]bool{key: true}})
	slow, slowStarted := make(chan struct{}), make(chan struct{})
	h.cx.run = func(ctx context.Context, thread, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		if text == "slow" {
			close(slowStarted) // l.cur is set before codex runs the turn
			<-slow
		}
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "re: " + text}, nil
	}
	h.start(t)
	ctx := context.Background()
	h.send(t, "l1", "m1", "hello")
	claimAndRun(t, h)
	thread := h.p.replyTo(t, "m1").Turn.ThreadID
	// The reply goes out before the worker ends the item: until it has,
	// the lane still counts as running a turn.
	waitFor(t, "lane idle", func() bool { return h.g.Stats().ActiveLanes == 0 })

	var loadedAtRestore bool
	err := h.g.Cluster().RestoreThread(ctx, key, thread, func(context.Context) error {
		h.cx.mu.Lock()
		loadedAtRestore = h.cx.loaded[thread]
		h.cx.mu.Unlock()
		return nil
	})
	if err != nil || loadedAtRestore {
		t.Fatalf("RestoreThread = %v, thread loaded while restoring %v; want it unloaded first", err, loadedAtRestore)
	}
	h.send(t, "l1", "m2", "again")
	claimAndRun(t, h)
	if o := h.p.replyTo(t, "m2"); o.Turn == nil || o.Turn.ThreadID != thread {
		t.Fatalf("reply after the restore %+v, want it on thread %s", o, thread)
	}
	h.cx.mu.Lock()
	resumed := h.cx.loaded[thread] && h.cx.ensures[len(h.cx.ensures)-1] == thread
	h.cx.mu.Unlock()
	if !resumed {
		t.Errorf("the turn after the restore did not load thread %s again", thread)
	}

	h.send(t, "l1", "m3", "slow")
	claimAndRun(t, h)
	<-slowStarted
	_, releasedBefore, _ := h.cx.snapshot()
	ran := false
	err = h.g.Cluster().RestoreThread(ctx, key, thread, func(context.Context) error { ran = true; return nil })
	_, releasedAfter, _ := h.cx.snapshot()
	if !errors.Is(err, ErrLaneBusy) || ran || len(releasedAfter) != len(releasedBefore) {
		t.Errorf("RestoreThread during the lane's turn = %v, restore ran %v, releases %d→%d; want ErrLaneBusy and nothing done",
			err, ran, len(releasedBefore), len(releasedAfter))
	}
	close(slow)
	h.p.replyTo(t, "m3")
}

// A typed answer another node recorded (it knew nothing of the question)
// and this node claimed answers the question its turn waits for: applied,
// not queued behind that turn, and a secret one is not kept in the row.
func TestClaimedTypedAnswerReachesTheTurnWaitingHere(t *testing.T) {
	h := newHarness(t)
	key := apiAddr("a").SessionKey()
	gate := &fakeGate{serving: map[string]bool{key: true}}
	h.g.SetLaneGate(gate)
	h.cx.run = askRun(&h.g, dbQuestion, tokenQuestion)
	h.start(t)
	h.send(t, "a", "m1", "please ask")
	claimAndRun(t, h)
	prompt(t, h.p)
	prompt(t, h.p)
	ctx := context.Background()
	recordedElsewhere := func(id, text string) {
		t.Helper()
		in := store.Inbound{Platform: "test", MessageID: id, SessionKey: key, SenderID: "u1", Text: text,
			Lane: laneKey(apiAddr("a"))}
		rowID, _, err := h.st.RecordInbound(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		h.g.Cluster().DispatchClaimed(ctx, []store.InboundRow{{ID: rowID, Inbound: in, State: store.InboundReceived}})
	}
	recordedElsewhere("a1", "PostgreSQL")
	recordedElsewhere("a2", "hunter2")
	reply := h.p.replyTo(t, "m1")
	if !strings.Contains(reply.Text, `"db":["PostgreSQL"]`) || !strings.Contains(reply.Text, `"token":["hunter2"]`) ||
		!strings.Contains(reply.Text, "given") {
		t.Fatalf("the turn got %q, want both typed answers", reply.Text)
	}
	if _, _, turns := h.cx.snapshot(); len(turns) != 1 {
		t.Errorf("turns run: %v, want only the asking one (the answers are not turns)", turns)
	}
	x, err := h.st.Exchange(ctx, "test", "a2")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(x.Text, "hunter2") || x.State != store.InboundDone {
		t.Errorf("secret answer's row: %q %s, want it redacted and done", x.Text, x.State)
	}
}

// callerGate is a fakeGate that reaches the lane's owner, another gateway,
// or fails with err.
type callerGate struct {
	*fakeGate
	owner *Gateway
	err   error
}

func (c *callerGate) CallOwner(ctx context.Context, key, op string, body []byte) ([]byte, error) {
	if c.err != nil {
		return nil, c.err
	}
	return c.owner.ServeCall(ctx, key, op, body), nil
}

// A press whose lane's owner cannot be asked is not refused as if nothing
// waited: the presser is told to press again. With no other owner at all
// it is handled where it was pressed.
func TestPressTheOwnerCannotBeAskedAbout(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want string
	}{
		{"database away", errors.New("cluster: call the lane's owner: connection refused"), pressUnreachable},
		{"no other owner", fmt.Errorf("%w (cluster: no other node owns the lane)", ErrNoLaneOwner), "no longer waiting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			front := newHarness(t)
			front.g.SetLaneGate(&callerGate{fakeGate: &fakeGate{serving: map[string]bool{}}, err: tc.err})
			front.start(t)
			if _, err := front.g.Deliver(context.Background(), Inbound{Address: apiAddr("a"), MessageID: "press-1", SenderID: "u1",
				Callback: "question:q1:0:1"}); err != nil {
				t.Fatal(err)
			}
			// Told through the outbox, which the lane's owner delivers.
			waitFor(t, "the notice queued for the lane", func() bool {
				front.st.mu.Lock()
				defer front.st.mu.Unlock()
				for _, m := range front.st.outbox {
					if m.SessionKey == apiAddr("a").SessionKey() && strings.Contains(m.Text, tc.want) {
						return true
					}
				}
				return false
			})
		})
	}
}

// A question's button pressed on a node that does not run the lane (the
// Telegram poller, say) answers the question the owner's turn waits for.
func TestButtonPressedOnAnotherNodeAnswersTheOwnersQuestion(t *testing.T) {
	owner := newHarness(t)
	key := apiAddr("a").SessionKey()
	owner.g.SetLaneGate(&fakeGate{serving: map[string]bool{key: true}})
	owner.cx.run = askRun(&owner.g, dbQuestion)
	owner.start(t)
	owner.send(t, "a", "m1", "please ask")
	claimAndRun(t, owner)
	q := prompt(t, owner.p)
	// The second option's button, as feature/questions names it.
	button := "question:" + q.Question.Pending.ID + ":0:1"

	front := newHarness(t)
	front.g.SetLaneGate(&callerGate{fakeGate: &fakeGate{serving: map[string]bool{}}, owner: owner.g})
	front.start(t)
	if _, err := front.g.Deliver(context.Background(), Inbound{Address: apiAddr("a"), MessageID: "press-1", SenderID: "u1",
		Callback: button}); err != nil {
		t.Fatal(err)
	}
	if reply := owner.p.replyTo(t, "m1"); !strings.Contains(reply.Text, `"db":["PostgreSQL"]`) {
		t.Fatalf("the owner's turn got %q, want the pressed option", reply.Text)
	}
	select {
	case o := <-front.p.out:
		t.Errorf("the pressing node said %q itself", o.Text)
	default:
	}
}
