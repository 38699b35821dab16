package api

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/store"
)

// rawPost posts body to lane demo and returns the status, the header and
// the raw answer.
func rawPost(t *testing.T, p *Platform, body string, stream bool) (int, http.Header, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+p.Addr()+"/api/lanes/demo/messages", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if stream {
		req.Header.Set("Accept", "text/event-stream")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, string(b)
}

// doneData returns the data of an event stream's "done" event.
func doneData(t *testing.T, stream string) string {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(stream))
	event := ""
	for sc.Scan() {
		if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			event = e
		} else if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok && event == "done" {
			return d
		}
	}
	t.Fatalf("no done event in %q", stream)
	return ""
}

func TestRepeatedIDReplaysOriginalAnswer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                  string
		firstStream, repeatSE bool
	}{
		{name: "json then json"},
		{name: "stream then json", firstStream: true},
		{name: "json then stream", repeatSE: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, _ := startAPI(t, "", echo)
			const msg = `{"text":"hi","id":"fixed-1"}`
			code, hdr, first := rawPost(t, p, msg, tt.firstStream)
			if code != 200 || hdr.Get(replayedHeader) != "" {
				t.Fatalf("first post: %d %v", code, hdr)
			}
			if tt.firstStream {
				first = doneData(t, first) + "\n"
			}
			code, hdr, again := rawPost(t, p, msg, tt.repeatSE)
			if code != 200 || hdr.Get(replayedHeader) != "true" {
				t.Fatalf("repeat: %d, %s=%q; want 200 and true", code, replayedHeader, hdr.Get(replayedHeader))
			}
			if tt.repeatSE {
				again = doneData(t, again) + "\n"
			}
			if again != first {
				t.Errorf("replayed body\n%s\nwant the original\n%s", again, first)
			}
			var r Response
			if json.Unmarshal([]byte(again), &r); r.Reply != "re: hi" || r.ID != "fixed-1" {
				t.Errorf("replayed answer %+v", r)
			}
		})
	}
}

func TestRepeatWhileRunningWaitsForSameAnswer(t *testing.T) {
	t.Parallel()
	recorded, release := make(chan struct{}), make(chan struct{})
	p, _ := startAPI(t, "", func(p *Platform, in gateway.Inbound) {
		close(recorded)
		<-release
		echo(p, in)
	})
	const msg = `{"text":"slow","id":"slow-1"}`
	type answer struct {
		code int
		hdr  http.Header
		body string
	}
	answers := make(chan answer, 2)
	postAsync := func() {
		go func() {
			resp, err := http.Post("http://"+p.Addr()+"/api/lanes/demo/messages", "application/json", strings.NewReader(msg))
			if err != nil {
				answers <- answer{}
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			answers <- answer{resp.StatusCode, resp.Header, string(b)}
		}()
	}
	postAsync()
	<-recorded
	postAsync()
	waitWaiters(t, p, "slow-1", 2) // the original and the replay both wait
	close(release)
	a, b := <-answers, <-answers
	if a.code != 200 || b.code != 200 || a.body != b.body || !strings.Contains(a.body, "re: slow") {
		t.Fatalf("answers %+v and %+v, want the same 200 answer", a, b)
	}
	if replays := a.hdr.Get(replayedHeader) + b.hdr.Get(replayedHeader); replays != "true" {
		t.Errorf("%s headers %q, want exactly one replay", replayedHeader, replays)
	}
}

// waitWaiters polls until n requests wait for message id (no signal exists
// for a request blocking in its handler).
func waitWaiters(t *testing.T, p *Platform, id string, n int) {
	t.Helper()
	got := 0
	if !poll.Wait(5*time.Second, nil, func() bool {
		p.mu.Lock()
		got = len(p.waiters[id])
		p.mu.Unlock()
		return got >= n
	}) {
		t.Fatalf("%d requests wait for %s, want %d", got, id, n)
	}
}

func TestDisconnectedClientGetsItsAnswerLater(t *testing.T) {
	t.Parallel()
	recorded, release, answered := make(chan struct{}), make(chan struct{}), make(chan struct{})
	p, _ := startAPI(t, "", func(p *Platform, in gateway.Inbound) {
		close(recorded)
		<-release
		echo(p, in) // nobody waits any more: recorded all the same
		close(answered)
	})
	ctx, cancel := context.WithCancel(context.Background())
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+p.Addr()+"/api/lanes/demo/messages",
			strings.NewReader(`{"text":"later","id":"gone-1"}`))
		req.Header.Set("Content-Type", "application/json")
		http.DefaultClient.Do(req)
	}()
	<-recorded
	cancel()
	<-gone
	waitWaiters(t, p, "gone-1", 0)
	close(release)
	<-answered

	code, got := call(t, p, "GET", "/api/lanes/demo/messages/gone-1", "", "")
	resp, _ := got["response"].(map[string]any)
	if code != 200 || got["id"] != "gone-1" || got["lane"] != "demo" || got["state"] != store.InboundReceived ||
		resp["reply"] != "re: later" {
		t.Errorf("GET = %d %v", code, got)
	}
	code, hdr, body := rawPost(t, p, `{"text":"later","id":"gone-1"}`, false)
	if code != 200 || hdr.Get(replayedHeader) != "true" || !strings.Contains(body, "re: later") {
		t.Errorf("replay = %d %v %s", code, hdr, body)
	}
}

func TestRepeatedIDRefusals(t *testing.T) {
	t.Parallel()
	p, sink := startAPI(t, "", echo)
	if code, _, _ := rawPost(t, p, `{"text":"hi","id":"m1"}`, false); code != 200 {
		t.Fatalf("first post %d", code)
	}
	// A message cut off by a restart: failed, with no answer.
	ctx := context.Background()
	cut, _, err := sink.st.RecordInbound(ctx, store.Inbound{Platform: PlatformName, MessageID: "cut-1",
		SessionKey: "v1:api:demo", SenderID: "local", Text: "long job"})
	if err != nil {
		t.Fatal(err)
	}
	if err := sink.st.SetInboundState(ctx, cut, store.InboundFailed); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, method, path, body string
		want                     int
		wantErr                  string
	}{
		{"different text", "POST", "/api/lanes/demo/messages", `{"text":"other","id":"m1"}`, 422, "different request"},
		{"different user", "POST", "/api/lanes/demo/messages", `{"text":"hi","user":"bob","id":"m1"}`, 422, "different request"},
		{"different lane", "POST", "/api/lanes/elsewhere/messages", `{"text":"hi","id":"m1"}`, 422, "different request"},
		{"failed without answer", "POST", "/api/lanes/demo/messages", `{"text":"long job","id":"cut-1"}`, 409, "new id"},
		{"get unknown", "GET", "/api/lanes/demo/messages/nope", "", 404, "no message"},
		{"get on another lane", "GET", "/api/lanes/elsewhere/messages/m1", "", 404, "no message"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, got := call(t, p, tt.method, tt.path, "", tt.body)
			if msg, _ := got["error"].(string); code != tt.want || !strings.Contains(msg, tt.wantErr) {
				t.Errorf("%d %v, want %d mentioning %q", code, got, tt.want, tt.wantErr)
			}
		})
	}
	if code, got := call(t, p, "GET", "/api/lanes/demo/messages/cut-1", "", ""); code != 200 ||
		got["state"] != store.InboundFailed || got["response"] != nil {
		t.Errorf("GET of the failed message = %d %v", code, got)
	}
}

func TestDecideReplay(t *testing.T) {
	t.Parallel()
	req := messageRequest{Text: "hi", User: "ann", ID: "m"}
	base := store.Exchange{InboundRow: store.InboundRow{Inbound: store.Inbound{SessionKey: "v1:api:demo",
		Text: "hi", SenderID: "ann"}}}
	with := func(state string, answer []byte, pending bool) store.Exchange {
		x := base
		x.State, x.Answer, x.AnswerPending = state, answer, pending
		return x
	}
	tests := []struct {
		name string
		x    store.Exchange
		lane string
		want replayAction
	}{
		{"answered", with(store.InboundDone, []byte("{}"), false), "demo", replayAnswer},
		{"received", with(store.InboundReceived, nil, false), "demo", replayWait},
		{"processing", with(store.InboundProcessing, nil, false), "demo", replayWait},
		{"done, answer in the outbox", with(store.InboundDone, nil, true), "demo", replayWait},
		{"refused with an answer", with(store.InboundIgnored, []byte("{}"), false), "demo", replayNoAnswer},
		{"not saved, with an answer", with(store.InboundFailed, []byte("{}"), false), "demo", replayNoAnswer},
		{"failed without answer", with(store.InboundFailed, nil, false), "demo", replayNoAnswer},
		{"done before answers were recorded", with(store.InboundDone, nil, false), "demo", replayNoAnswer},
		{"other lane", with(store.InboundDone, []byte("{}"), false), "other", replayMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideReplay(tt.x, tt.lane, req); got != tt.want {
				t.Errorf("decideReplay = %d, want %d", got, tt.want)
			}
		})
	}
}

// An answer whose request went away is recorded. When the client chose the
// message id, the replay is how it asks again, so the answer is delivered
// by being recorded and the lane's next request does not carry it a
// second time; a message posted without an id (the client never learnt the
// one made for it) has its answer carried by the next request instead.
func TestAbandonedAnswerReachesTheClientOnce(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		id        string
		wantCarry bool
	}{
		{name: "client id", id: "mine-1"},
		{name: "generated id", id: generatedIDPrefix + "x1", wantCarry: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, sink := startAPI(t, "", echo)
			ans := gateway.Outbound{Address: laneAddress("demo"), Kind: gateway.OutReply, Text: "re: gone",
				InReplyTo: tt.id, Turn: &gateway.TurnInfo{ThreadID: "th", TurnID: "tu", Status: "completed"}}
			sink.enqueue(9, ans) // nobody waits for tt.id any more
			if _, held := sink.deliveries(9); held != tt.wantCarry {
				t.Fatalf("with nobody waiting: held %v, want %v", held, tt.wantCarry)
			}
			_, body := post(t, p, "demo", "", `{"text":"next"}`)
			notes, _ := body["notices"].([]any)
			if carried := len(notes) == 1 && notes[0] == "re: gone"; carried != tt.wantCarry {
				t.Errorf("next request's notices %v; carried = %v, want %v", body["notices"], carried, tt.wantCarry)
			}
		})
	}
}
