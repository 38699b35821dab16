package api

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/store"
)

// fakeRelay is the cluster's relay in memory: events in one list, each
// tagged with the node that offered it, and calls run at once by the
// owner's ServeCall.
type fakeRelay struct {
	mu     sync.Mutex
	events []relayed
	front  *Platform // told of every event, as the LISTEN connection would
	owner  *Platform // runs the calls
}

type relayed struct {
	RelayEvent
	node string
}

// relayView is one node's side of the fake relay.
type relayView struct {
	r    *fakeRelay
	node string
}

func (v relayView) Offer(ev RelayEvent) {
	v.r.mu.Lock()
	ev.ID = int64(len(v.r.events) + 1)
	v.r.events = append(v.r.events, relayed{ev, v.node})
	front := v.r.front
	v.r.mu.Unlock()
	if v.node != "front" && front != nil {
		front.StreamNotified(ev.SessionKey)
	}
}

func (v relayView) Position(context.Context) (int64, error) {
	v.r.mu.Lock()
	defer v.r.mu.Unlock()
	return int64(len(v.r.events)), nil
}

func (v relayView) Since(_ context.Context, key string, after int64, limit int) ([]RelayEvent, error) {
	v.r.mu.Lock()
	defer v.r.mu.Unlock()
	var out []RelayEvent
	for _, ev := range v.r.events {
		if ev.ID > after && ev.SessionKey == key && ev.node != v.node && len(out) < limit {
			out = append(out, ev.RelayEvent)
		}
	}
	return out, nil
}

// Flush: the fake writes at once.
func (v relayView) Flush(context.Context) {}

// Serves: the owner runs every lane, the front none.
func (v relayView) Serves(string) bool { return v.node == "owner" }

func (v relayView) CallOwner(ctx context.Context, key, op string, body []byte) ([]byte, error) {
	if v.node == "owner" {
		return nil, ErrNoRemoteOwner
	}
	return v.r.owner.ServeCall(ctx, key, op, body), nil
}

// relayNodes is a request's node (front, listening) and its lane's owner
// (owner, with the questions), sharing one store and one relay.
type relayNodes struct {
	front, owner *Platform
	asker        *askerSink
	frontSink    *fakeSink
	received     chan gateway.Inbound
}

func startRelayNodes(t *testing.T) *relayNodes {
	t.Helper()
	r := &fakeRelay{}
	n := &relayNodes{received: make(chan gateway.Inbound, 4)}
	var st *store.Store
	n.front = runAPI(t, Config{SharedAnswers: true, SharedPoll: time.Hour, Relay: relayView{r, "front"}},
		func(p *Platform, s *store.Store) testGateway {
			st = s
			n.frontSink = newFakeSink(p, s, func(_ *Platform, in gateway.Inbound) { n.received <- in })
			return n.frontSink
		})
	n.owner = New(Config{SharedAnswers: true, Answers: st, Relay: relayView{r, "owner"}})
	n.asker = newAskerSink(n.owner, st)
	n.owner.cfg.Approvals, n.owner.cfg.Questions, n.owner.cfg.Deliveries = n.asker, n.asker, n.asker
	n.owner.sink = n.asker
	r.mu.Lock()
	r.front, r.owner = n.front, n.owner
	r.mu.Unlock()
	return n
}

// sseEvents posts body to lane demo on p as an event stream and sends
// each event (name, data) as it arrives; the channel closes at the end.
func sseEvents(t *testing.T, p *Platform, body string) <-chan [2]string {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+p.Addr()+"/api/lanes/demo/messages", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan [2]string, 64)
	go func() {
		defer close(ch)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		name := ""
		for sc.Scan() {
			if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
				name = e
			} else if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				ch <- [2]string{name, d}
			}
		}
	}()
	return ch
}

// nextEvent waits for the next event named one of names, skipping others
// (they are returned in skipped).
func nextEvent(t *testing.T, ch <-chan [2]string, names ...string) (data string, skipped [][2]string) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("stream ended waiting for %v (skipped %v)", names, skipped)
			}
			for _, n := range names {
				if ev[0] == n {
					return ev[1], skipped
				}
			}
			skipped = append(skipped, ev)
		case <-timeout:
			t.Fatalf("no %v event (skipped %v)", names, skipped)
		}
	}
}

// postAnswer posts body to path on p and returns the status and body.
func postAnswer(t *testing.T, p *Platform, path, body string) (int, string) {
	t.Helper()
	resp, err := http.Post("http://"+p.Addr()+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// A request held by a node that does not own its lane is streamed what the
// owner streams (the reply as it grows, the question and its notices) and
// lists and answers the question through the owner; the answer ends the
// owner's turn and the request gets the reply.
func TestRelayStreamsAndAnswersAcrossNodes(t *testing.T) {
	t.Parallel()
	n := startRelayNodes(t)
	events := sseEvents(t, n.front, `{"text":"ASK me","id":"m-1"}`)
	in := <-n.received

	// The owner's turn: a preview, an edit, then the question.
	previewID, err := n.owner.Send(context.Background(), gateway.Outbound{Address: in.Address, Kind: gateway.OutPreview,
		Text: "Let me", InReplyTo: in.MessageID})
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := nextEvent(t, events, "delta"); d != `"Let me"` {
		t.Errorf("first delta = %s", d)
	}
	if err := n.owner.Edit(context.Background(), in.Address, previewID, "Let me think"); err != nil {
		t.Fatal(err)
	}
	if d, _ := nextEvent(t, events, "delta"); d != `" think"` {
		t.Errorf("second delta = %s", d)
	}
	turnDone := make(chan struct{})
	go func() {
		defer close(turnDone)
		n.asker.turn(n.owner, in)
	}()
	info := waitQuestion(t, n.asker)
	data, skipped := nextEvent(t, events, "question")
	var q Question
	if err := json.Unmarshal([]byte(data), &q); err != nil || q.ID != info.ID || len(q.Questions) != 2 {
		t.Fatalf("question event = %s (%v)", data, err)
	}
	if len(skipped) == 0 || skipped[0][0] != "notice" || !strings.Contains(skipped[0][1], "Which colour?") {
		t.Errorf("before the question event: %v, want its notice", skipped)
	}
	// With no request of its own to take it, the owner sends the question
	// again through the outbox, text only: the same notice, not another.
	firstText := "❓ " + twoQuestions[0].Question + " (question " + info.ID + ")"
	if _, err := n.owner.Send(context.Background(), gateway.Outbound{ID: 42, Address: in.Address, Kind: gateway.OutNotice,
		Text: firstText}); err != gateway.ErrDeferred {
		t.Fatalf("owner's outbox send: %v, want deferred", err)
	}

	// Listed and answered on the front, run by the owner.
	var listed map[string][]Question
	if code := getJSON(t, n.front, "/api/lanes/demo/questions", &listed); code != 200 ||
		len(listed["questions"]) != 1 || listed["questions"][0].ID != info.ID {
		t.Fatalf("front lists %d %+v, want the owner's question", code, listed)
	}
	code, body := postAnswer(t, n.front, "/api/lanes/demo/questions/"+info.ID, `{"answers":{"color":["Blue"]},"user":"ann"}`)
	if code != 200 || !strings.Contains(body, `"answered":["color"]`) {
		t.Fatalf("answer via the front: %d %s", code, body)
	}
	code, body = postAnswer(t, n.front, "/api/lanes/demo/questions/"+info.ID, `{"answers":{"color":["Red"]}}`)
	if code != http.StatusConflict {
		t.Errorf("answering twice via the front: %d %s, want the owner's 409", code, body)
	}
	code, _ = postAnswer(t, n.front, "/api/lanes/demo/questions/"+info.ID, `{"answers":{"name":["Ann"]}}`)
	if code != 200 {
		t.Fatalf("second answer: %d", code)
	}
	if got := n.asker.calls(); len(got) != 2 || !strings.Contains(got[0], "color=Blue ann") {
		t.Errorf("owner's answers = %v", got)
	}

	// The reply the owner records ends the front's stream.
	<-turnDone
	n.front.AnswerRecorded("m-1")
	done, _ := nextEvent(t, events, "done")
	var resp Response
	if err := json.Unmarshal([]byte(done), &resp); err != nil || resp.Reply != "answers: color=Blue name=Ann" {
		t.Fatalf("done = %s (%v)", done, err)
	}
	if len(resp.Questions) != 1 || len(resp.Notices) != 2 {
		t.Errorf("done carries %d questions and %d notices, want what the stream showed (1, 2)", len(resp.Questions), len(resp.Notices))
	}
	for ev := range events {
		t.Errorf("after done: %v", ev)
	}
	if delivered, _ := n.frontSink.deliveries(42); delivered != 1 {
		t.Errorf("the outbox row of the repeated notice delivered %d times, want once (by the front's request)", delivered)
	}
	n.owner.mu.Lock()
	left := len(n.owner.remote)
	n.owner.mu.Unlock()
	if left != 0 {
		t.Errorf("owner still relays %d previews of an answered message", left)
	}
}

// On the owner a list or answer for its own lane is never called across:
// a forwarded call that finds nothing answers 404 from there.
func TestRelayCallIsNeverPassedOn(t *testing.T) {
	t.Parallel()
	n := startRelayNodes(t)
	code, body := postAnswer(t, n.front, "/api/lanes/demo/questions/q9", `{"answers":{"color":["Red"]}}`)
	if code != http.StatusNotFound || !strings.Contains(body, "not pending") {
		t.Errorf("answer to nothing via the front: %d %s, want the owner's 404", code, body)
	}
	var rep relayReply
	raw := n.owner.ServeCall(context.Background(), laneAddress("other").SessionKey(), callListQuestions, []byte(`{"lane":"demo"}`))
	if err := json.Unmarshal(raw, &rep); err != nil || rep.Code != http.StatusBadRequest {
		t.Errorf("a call naming another lane than its own: %s, want 400", raw)
	}
}

// gatedView holds the front's first read after it is armed until released.
type gatedView struct {
	relayView
	armed   *atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g gatedView) Since(ctx context.Context, key string, after int64, limit int) ([]RelayEvent, error) {
	evs, err := g.relayView.Since(ctx, key, after, limit)
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return evs, err
}

// A notice read for a request that leaves before it is handed over is not
// attached to it: nobody would report its row, and the platform would
// count it carried for ever.
func TestRelayedNoticeSkipsARequestThatLeft(t *testing.T) {
	t.Parallel()
	r := &fakeRelay{} // no front: the test reads itself
	received := make(chan gateway.Inbound, 4)
	var st *store.Store
	g := gatedView{relayView: relayView{r, "front"}, armed: &atomic.Bool{}, entered: make(chan struct{}), release: make(chan struct{})}
	front := runAPI(t, Config{SharedAnswers: true, SharedPoll: time.Hour, Relay: g},
		func(p *Platform, s *store.Store) testGateway {
			st = s
			return newFakeSink(p, s, func(_ *Platform, in gateway.Inbound) { received <- in })
		})
	owner := New(Config{SharedAnswers: true, Answers: st, Relay: relayView{r, "owner"}})

	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+front.Addr()+"/api/lanes/demo/messages", strings.NewReader(`{"text":"hi","id":"m-1"}`))
	req.Header.Set("Content-Type", "application/json")
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	in := <-received
	owner.Send(context.Background(), gateway.Outbound{ID: 42, Address: in.Address, Kind: gateway.OutNotice, Text: "n"})
	g.armed.Store(true)
	pulled := make(chan struct{})
	go func() {
		defer close(pulled)
		front.pullLane(in.Address.SessionKey())
	}()
	<-g.entered // the read has its waiters and events
	cancel()    // the client goes away: the request leaves and reports
	poll.Until(t, 5*time.Second, "the request to leave", func() bool {
		front.mu.Lock()
		defer front.mu.Unlock()
		return len(front.waiters) == 0
	})
	close(g.release)
	<-pulled
	front.mu.Lock()
	defer front.mu.Unlock()
	if len(front.carried) != 0 {
		t.Errorf("rows carried after every request left: %v", front.carried)
	}
}

// asyncRelay is the owner's side as the cluster node has it: offers wait
// in a queue a writer drains later, or Flush now.
type asyncRelay struct {
	relayView
	mu    sync.Mutex
	queue []RelayEvent
}

func (a *asyncRelay) Offer(ev RelayEvent) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.queue = append(a.queue, ev)
}

func (a *asyncRelay) Flush(context.Context) {
	a.mu.Lock()
	q := a.queue
	a.queue = nil
	a.mu.Unlock()
	for _, ev := range q {
		a.relayView.Offer(ev)
	}
}

// The answer the owner records cannot overtake the turn's last notice on
// its way to the request on the other node: the owner flushes its relay
// before recording, and the request reads the lane before it ends.
func TestRelayedAnswerComesAfterTheTurnsLastNotice(t *testing.T) {
	t.Parallel()
	r := &fakeRelay{}
	received := make(chan gateway.Inbound, 4)
	var st *store.Store
	front := runAPI(t, Config{SharedAnswers: true, SharedPoll: time.Hour, Relay: relayView{r, "front"}},
		func(p *Platform, s *store.Store) testGateway {
			st = s
			return newFakeSink(p, s, func(_ *Platform, in gateway.Inbound) { received <- in })
		})
	owner := New(Config{SharedAnswers: true, Answers: st, Relay: &asyncRelay{relayView: relayView{r, "owner"}}})

	events := sseEvents(t, front, `{"text":"hi","id":"m-1"}`)
	in := <-received
	if _, err := owner.Send(context.Background(), gateway.Outbound{ID: 5, Address: in.Address, Kind: gateway.OutNotice,
		Text: "LAST NOTICE"}); err != gateway.ErrDeferred {
		t.Fatalf("owner's notice: %v, want deferred", err)
	}
	if _, err := owner.Send(context.Background(), gateway.Outbound{ID: 6, Address: in.Address, Kind: gateway.OutReply,
		Text: "the answer", InReplyTo: in.MessageID, Turn: &gateway.TurnInfo{ThreadID: "th", TurnID: "tu", Status: "completed"}}); err != nil {
		t.Fatal(err)
	}
	front.AnswerRecorded("m-1")
	done, skipped := nextEvent(t, events, "done")
	var resp Response
	if err := json.Unmarshal([]byte(done), &resp); err != nil || resp.Reply != "the answer" {
		t.Fatalf("done = %s (%v)", done, err)
	}
	if len(skipped) == 0 || skipped[0] != [2]string{"notice", `"LAST NOTICE"`} {
		t.Errorf("before done: %v, want the turn's last notice", skipped)
	}
}
