package cluster

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A message's preview is one row, replaced with a new id as it changes, so
// a reader past the old one sees the new one; lane notices are appended;
// the end of a message deletes its rows; a node never reads its own.
func TestStreamReplacesPreviewsAppendsNoticesAndEnds(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	ctx := testContext(t)
	owner, holder := NewStream(openDB(t, dsn), "node-a"), NewStream(openDB(t, dsn), "node-b")
	const lane = "v1:api:x"
	start, err := holder.Position(ctx)
	if err != nil {
		t.Fatal(err)
	}
	publish := func(evs ...StreamEvent) {
		t.Helper()
		if err := owner.Publish(ctx, evs); err != nil {
			t.Fatalf("Publish: %v", err)
		}
	}
	publish(StreamEvent{SessionKey: lane, MessageID: "m1", Kind: "preview", Body: []byte("Hel")},
		StreamEvent{SessionKey: lane, Kind: "notice", Body: []byte("n1")})
	first := since(t, holder, lane, start)
	if got := kinds(first); got != "preview:Hel notice:n1" {
		t.Fatalf("first read = %s", got)
	}
	publish(StreamEvent{SessionKey: lane, MessageID: "m1", Kind: "preview", Body: []byte("Hello")})
	if got := kinds(since(t, holder, lane, first[len(first)-1].ID)); got != "preview:Hello" {
		t.Errorf("after the edit = %s, want the new preview only", got)
	}
	if got := kinds(since(t, holder, lane, start)); got != "notice:n1 preview:Hello" {
		t.Errorf("everything = %s, want one preview row, replaced", got)
	}
	if got := since(t, owner, lane, start); len(got) != 0 {
		t.Errorf("the owner reads its own events: %s", kinds(got))
	}
	publish(StreamEvent{SessionKey: lane, MessageID: "m1", Kind: EndKind})
	if got := kinds(since(t, holder, lane, start)); got != "notice:n1" {
		t.Errorf("after the end = %s, want the notice only", got)
	}
	if got := since(t, holder, "v1:api:other", start); len(got) != 0 {
		t.Errorf("another lane reads %s", kinds(got))
	}
	if err := owner.Prune(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if got := since(t, holder, lane, start); len(got) != 0 {
		t.Errorf("after pruning = %s", kinds(got))
	}
}

func since(t *testing.T, s *Stream, lane string, after int64) []StreamEvent {
	t.Helper()
	evs, err := s.Since(testContext(t), lane, after, 100)
	if err != nil {
		t.Fatalf("Since: %v", err)
	}
	return evs
}

func kinds(evs []StreamEvent) string {
	out := ""
	for i, ev := range evs {
		if i > 0 {
			out += " "
		}
		out += fmt.Sprintf("%s:%s", ev.Kind, ev.Body)
	}
	return out
}

// A call reaches only a lane another live node holds; that node takes it
// once, and the caller reads the reply once.
func TestCallsReachTheLanesOwnerOnce(t *testing.T) {
	t.Parallel()
	dsn := newDatabase(t)
	ctx := testContext(t)
	a := newNode(t, dsn, "node-a")
	const lane = "v1:api:x"
	ownerStream, callerStream := NewStream(openDB(t, dsn), "node-a"), NewStream(openDB(t, dsn), "node-b")
	if _, err := callerStream.Ask(ctx, lane, "op", nil); !errors.Is(err, ErrNoOwner) {
		t.Fatalf("Ask of a lane nobody holds = %v, want ErrNoOwner", err)
	}
	if _, ok, err := a.Acquire(ctx, LanePrefix+lane, time.Minute); err != nil || !ok {
		t.Fatalf("Acquire: %v %v", ok, err)
	}
	if _, err := ownerStream.Ask(ctx, lane, "op", nil); !errors.Is(err, ErrNoOwner) {
		t.Errorf("the owner asking itself = %v, want ErrNoOwner", err)
	}
	id, err := callerStream.Ask(ctx, lane, "questions.list", []byte(`{"lane":"x"}`))
	if err != nil {
		t.Fatalf("Ask: %v", err)
	}
	notMine, err := callerStream.TakeCalls(ctx, func(string) bool { return false }, time.Minute)
	if err != nil || len(notMine) != 0 {
		t.Fatalf("TakeCalls of a node owning nothing = %v %v", notMine, err)
	}
	calls, err := ownerStream.TakeCalls(ctx, func(key string) bool { return key == lane }, time.Minute)
	if err != nil || len(calls) != 1 || calls[0].ID != id || calls[0].Op != "questions.list" || string(calls[0].Body) != `{"lane":"x"}` {
		t.Fatalf("TakeCalls = %+v %v", calls, err)
	}
	if again, _ := ownerStream.TakeCalls(ctx, func(string) bool { return true }, time.Minute); len(again) != 0 {
		t.Errorf("a call taken twice: %+v", again)
	}
	var left []byte
	if err := openDB(t, dsn).QueryRowContext(ctx, `SELECT body FROM cluster_calls WHERE id = $1`, id).Scan(&left); err != nil || len(left) != 0 {
		t.Errorf("a taken call's body = %q %v, want it cleared (it may hold a secret answer)", left, err)
	}
	if _, ok, err := callerStream.Replied(ctx, id); ok || err != nil {
		t.Fatalf("Replied before the reply = %v %v", ok, err)
	}
	if err := ownerStream.Reply(ctx, id, []byte("done")); err != nil {
		t.Fatal(err)
	}
	reply, ok, err := callerStream.Replied(ctx, id)
	if err != nil || !ok || string(reply) != "done" {
		t.Fatalf("Replied = %q %v %v", reply, ok, err)
	}
	if _, ok, _ := callerStream.Replied(ctx, id); ok {
		t.Error("a reply read twice")
	}
	// A call older than the callers wait for is not run: its caller gave up.
	if _, err := callerStream.Ask(ctx, lane, "questions.list", nil); err != nil {
		t.Fatal(err)
	}
	if stale, err := ownerStream.TakeCalls(ctx, func(string) bool { return true }, 0); err != nil || len(stale) != 0 {
		t.Errorf("TakeCalls with no time to spare = %+v %v, want none", stale, err)
	}
}

// BenchmarkStreamPublishAndRead is one event of a lane's stream on its
// way across: the owner's write (a preview replaced, with its NOTIFY) and
// the other node's read of what is new.
func BenchmarkStreamPublishAndRead(b *testing.B) {
	dsn := newDatabase(b)
	ctx := testContext(b)
	owner, holder := NewStream(openDB(b, dsn), "node-a"), NewStream(openDB(b, dsn), "node-b")
	const lane = "v1:api:bench"
	text := []byte(strings.Repeat("a growing reply ", 64)) // 1 KB, a preview's size
	var after int64
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if err := owner.Publish(ctx, []StreamEvent{{SessionKey: lane, MessageID: "m1", Kind: "preview", Body: text}}); err != nil {
			b.Fatal(err)
		}
		evs, err := holder.Since(ctx, lane, after, 10)
		if err != nil || len(evs) != 1 {
			b.Fatalf("Since = %d events, %v", len(evs), err)
		}
		after = evs[0].ID
	}
}
