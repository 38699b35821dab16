package node

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/pgtest"
)

// Two nodes on PostgreSQL: what the lane's owner offers reaches the other
// node's listener and reads back there (a message's preview replaced, not
// appended); the other node's call reaches the owner's handler by its
// prefix and the reply comes back; the owner calling its own lane is told
// there is no other owner.
func TestRelayBetweenTwoNodes(t *testing.T) {
	dsn := pgtest.Shared(t).NewDatabase(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	start := func(id string) *Coordinator {
		c, err := startNode(ctx, dsn, id, t.TempDir(), "", time.Minute, zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return c
	}
	owner, other := start("node-a"), start("node-b")
	const key = "v1:api:relay"
	lease, ok, err := owner.node.Acquire(ctx, cluster.LanePrefix+key, time.Minute)
	if err != nil || !ok {
		t.Fatalf("Acquire: %v %v", ok, err)
	}
	owner.hold(key, lease)
	heard := make(chan string, 64)
	other.SetStreamed(func(k string) { heard <- k })
	owner.HandleCalls("test", func(_ context.Context, k, op string, body []byte) []byte {
		return []byte(k + " " + op + " " + string(body))
	})
	for _, c := range []*Coordinator{owner, other} {
		go c.listen(ctx)
		go c.writeStream(ctx)
		go c.runCalls(ctx)
	}

	// The other node's LISTEN may not be up yet: offer until it hears.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for n := 0; ; n++ {
		owner.Offer(cluster.StreamEvent{SessionKey: key, MessageID: "m1", Kind: "preview", Body: []byte("v" + string(rune('a'+n%26)))})
		select {
		case k := <-heard:
			if k != key {
				t.Fatalf("heard of lane %q", k)
			}
		case <-tick.C:
			continue
		case <-ctx.Done():
			t.Fatal("the other node never heard of the stream")
		}
		break
	}
	evs, err := other.StreamSince(ctx, key, 0, 10)
	if err != nil || len(evs) != 1 || evs[0].MessageID != "m1" || evs[0].Kind != "preview" {
		t.Fatalf("StreamSince = %+v %v, want the message's one preview", evs, err)
	}

	reply, err := other.CallOwner(ctx, key, "test/echo", []byte("hi"))
	if err != nil || string(reply) != key+" test/echo hi" {
		t.Fatalf("CallOwner = %q %v", reply, err)
	}
	reply, err = other.CallOwner(ctx, key, "newer/op", nil)
	if err != nil || len(reply) != 0 {
		t.Errorf("an op nobody handles: %q %v, want an empty reply", reply, err)
	}
	if _, err := owner.CallOwner(ctx, key, "test/echo", nil); !errors.Is(err, cluster.ErrNoOwner) || !errors.Is(err, gateway.ErrNoLaneOwner) {
		t.Errorf("the owner calling its own lane: %v, want ErrNoOwner, as the gateway knows it", err)
	}

	// What was offered before a flush is in the database after it.
	owner.Offer(cluster.StreamEvent{SessionKey: key, Kind: "notice", Body: []byte("last words")})
	owner.FlushStream(ctx)
	evs, err = other.StreamSince(ctx, key, 0, 100)
	if err != nil || len(evs) == 0 || string(evs[len(evs)-1].Body) != "last words" {
		t.Errorf("after FlushStream: %+v %v, want the notice offered before it, last", evs, err)
	}
}

// The queue keeps a message's latest preview only, every lane notice in
// order, refuses (and counts) what passes its bound, and a failed write's
// events go back ahead of what came since, still replaced by newer ones.
func TestStreamQueueCoalescesBoundsAndPutsBack(t *testing.T) {
	q := newStreamQueue()
	ev := func(msg, kind, body string) cluster.StreamEvent {
		return cluster.StreamEvent{SessionKey: "k", MessageID: msg, Kind: kind, Body: []byte(body)}
	}
	q.offer(ev("m1", "preview", "a"))
	q.offer(ev("", "notice", "n1"))
	q.offer(ev("m1", "preview", "ab"))
	q.offer(ev("", "notice", "n2"))
	got, dropped, _ := q.take()
	if s := bodies(got); s != "ab n1 n2" || dropped != 0 {
		t.Fatalf("take = %s (%d dropped), want the latest preview in its first place and both notices", s, dropped)
	}
	q.offer(ev("m1", "preview", "abc"))
	q.putBack(got)
	if s, _, _ := q.take(); bodies(s) != "abc n1 n2" {
		t.Errorf("after a put back = %s, want the newer preview in the old one's place", bodies(s))
	}
	for i := 0; i < maxStreamQueue+5; i++ {
		q.offer(ev("", "notice", "n"))
	}
	if s, dropped, _ := q.take(); len(s) != maxStreamQueue || dropped != 5 {
		t.Errorf("past the bound: %d kept, %d dropped; want %d and 5", len(s), dropped, maxStreamQueue)
	}
}

func bodies(evs []cluster.StreamEvent) string {
	out := ""
	for i, ev := range evs {
		if i > 0 {
			out += " "
		}
		out += string(ev.Body)
	}
	return out
}
