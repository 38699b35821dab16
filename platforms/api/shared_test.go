package api

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/store"
)

// twoNodes is the API platform of the node holding the request (front,
// running over st) and that of the lane's owner (owner, never running a
// listener): the owner only records answers in the shared store.
type twoNodes struct {
	front, owner *Platform
	sink         *fakeSink
	st           *store.Store
	received     chan gateway.Inbound // messages the front recorded and did not run
}

func startTwoNodes(t *testing.T, poll time.Duration) *twoNodes {
	t.Helper()
	n := &twoNodes{received: make(chan gateway.Inbound, 10)}
	n.front = runAPI(t, Config{SharedAnswers: true, SharedPoll: poll}, func(p *Platform, st *store.Store) testGateway {
		n.st = st
		n.sink = newFakeSink(p, st, func(_ *Platform, in gateway.Inbound) { n.received <- in })
		return n.sink
	})
	n.owner = New(Config{SharedAnswers: true, Answers: n.st})
	return n
}

// ownerAnswers is the owner's deliverer sending the reply to in: it must
// count as delivered (nobody waits on the owner) and hold nothing back.
func (n *twoNodes) ownerAnswers(t *testing.T, in gateway.Inbound) {
	t.Helper()
	_, err := n.owner.Send(context.Background(), gateway.Outbound{ID: 7, Address: in.Address, Kind: gateway.OutReply,
		Text: "re: " + in.Text, InReplyTo: in.MessageID,
		Turn: &gateway.TurnInfo{ThreadID: "th", TurnID: "tu", Status: "completed"}})
	if err != nil {
		t.Fatalf("owner's Send: %v; want delivered (the request is on another node)", err)
	}
	n.owner.mu.Lock()
	defer n.owner.mu.Unlock()
	if len(n.owner.deferredLanes) != 0 {
		t.Fatalf("owner held the answer for the lane's next request too: %v", n.owner.deferredLanes)
	}
}

type posted struct {
	code int
	hdr  http.Header
	body string
}

// postInBackground posts body to lane demo; the channel gets the answer
// (code 0 and the error's text if the request failed).
func postInBackground(p *Platform, body string, stream bool) <-chan posted {
	ch := make(chan posted, 1)
	go func() {
		req, _ := http.NewRequest("POST", "http://"+p.Addr()+"/api/lanes/demo/messages", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if stream {
			req.Header.Set("Accept", "text/event-stream")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			ch <- posted{body: err.Error()}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			ch <- posted{body: err.Error()}
			return
		}
		ch <- posted{resp.StatusCode, resp.Header, string(b)}
	}()
	return ch
}

// A request sent to a node that does not own its lane is answered with the
// reply the owner records, JSON or SSE, generated id or the client's, woken
// by the owner's notification or, without one, by the poll.
func TestSharedAnswerReachesTheRequestOnAnotherNode(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		stream bool
		notify bool
	}{
		{name: "json, notified", body: `{"text":"hi","id":"c-1"}`, notify: true},
		{name: "sse, notified", body: `{"text":"hi","id":"c-2"}`, stream: true, notify: true},
		{name: "json, generated id, notified", body: `{"text":"hi"}`, notify: true},
		{name: "json, polled", body: `{"text":"hi","id":"c-3"}`},
		{name: "sse, polled", body: `{"text":"hi","id":"c-4"}`, stream: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			poll := time.Hour // only the notification can wake it
			if !tt.notify {
				poll = 10 * time.Millisecond
			}
			n := startTwoNodes(t, poll)
			res := postInBackground(n.front, tt.body, tt.stream)
			in := <-n.received
			n.ownerAnswers(t, in)
			if tt.notify {
				n.front.AnswerRecorded(in.MessageID)
			}
			got := <-res
			if got.code != 200 {
				t.Fatalf("status %d: %s", got.code, got.body)
			}
			x, err := n.st.Exchange(context.Background(), PlatformName, in.MessageID)
			if err != nil {
				t.Fatal(err)
			}
			answer := got.body
			if tt.stream {
				if !strings.Contains(got.body, "event: delta\ndata: \"re: hi\"\n") {
					t.Errorf("stream %q has no delta with the reply", got.body)
				}
				answer = doneData(t, got.body)
			}
			if strings.TrimSpace(answer) != string(x.Answer) {
				t.Fatalf("answer %q, want the recorded %q", answer, x.Answer)
			}
			var resp Response
			if err := json.Unmarshal(x.Answer, &resp); err != nil || resp.Reply != "re: hi" || resp.ID != in.MessageID {
				t.Fatalf("recorded answer %s (%v): want the owner's reply to %s", x.Answer, err, in.MessageID)
			}
			if n.sink.accepted != 1 {
				t.Fatalf("front recorded %d messages, want 1", n.sink.accepted)
			}
		})
	}
}

// A message that ends without an answer (its owner died mid-turn and the
// new owner marked it cut off) ends the request on the other node with
// 503 and a retry hint, not a wait until the client gives up.
func TestSharedMessageEndedWithoutAnswerIs503(t *testing.T) {
	t.Parallel()
	for _, stream := range []bool{false, true} {
		n := startTwoNodes(t, 10*time.Millisecond)
		res := postInBackground(n.front, `{"text":"hi","id":"cut"}`, stream)
		in := <-n.received
		x, err := n.st.Exchange(context.Background(), PlatformName, in.MessageID)
		if err != nil {
			t.Fatal(err)
		}
		if err := n.st.SetInboundState(context.Background(), x.ID, store.InboundFailed); err != nil {
			t.Fatal(err)
		}
		got := <-res
		if stream {
			if got.code != 200 || !strings.Contains(got.body, "event: error\n") || !strings.Contains(got.body, "send it again with a new id") {
				t.Fatalf("stream: %d %q; want an error event with the retry hint", got.code, got.body)
			}
			continue
		}
		if got.code != http.StatusServiceUnavailable || got.hdr.Get("Retry-After") != "1" ||
			!strings.Contains(got.body, "send it again with a new id") {
			t.Fatalf("json: %d %v %q; want 503, Retry-After 1 and the hint", got.code, got.hdr, got.body)
		}
	}
}

// The gateway closes a refused message's inbox row before it queues the
// refusal: a request that looks at the message in between keeps waiting
// (endedGrace), and gets the refusal, not a 503.
func TestSharedRefusalAfterTheRowClosedIsTheAnswer(t *testing.T) {
	t.Parallel()
	n := startTwoNodes(t, time.Hour)
	res := postInBackground(n.front, `{"text":"hi","id":"refused"}`, false)
	in := <-n.received
	x, err := n.st.Exchange(context.Background(), PlatformName, in.MessageID)
	if err != nil {
		t.Fatal(err)
	}
	if err := n.st.SetInboundState(context.Background(), x.ID, store.InboundIgnored); err != nil {
		t.Fatal(err)
	}
	n.front.collectRecorded(in.MessageID) // the look between the two writes
	n.front.mu.Lock()
	waiting := len(n.front.waiters[in.MessageID])
	n.front.mu.Unlock()
	if waiting != 1 {
		t.Fatalf("%d requests still wait after the first look at the closed row, want 1", waiting)
	}
	if _, err := n.owner.Send(context.Background(), gateway.Outbound{ID: 8, Address: in.Address, Kind: gateway.OutReply,
		Text: "Too many messages are waiting here", InReplyTo: in.MessageID}); err != nil {
		t.Fatal(err)
	}
	n.front.AnswerRecorded(in.MessageID)
	got := <-res
	if got.code != 200 || !strings.Contains(got.body, "Too many messages are waiting here") {
		t.Fatalf("%d %q; want 200 with the refusal", got.code, got.body)
	}
}
