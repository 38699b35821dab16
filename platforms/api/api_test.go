package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/store"
)

// fakeSink answers every message on its own goroutine through the
// platform, as the gateway's outbox would. It records messages in the real
// store (which dedupes them) and plays the outbox for rows sent with
// enqueue: a row the platform defers stays held until the platform asks
// for its lane again.
type fakeSink struct {
	p      *Platform
	st     *store.Store
	mu     sync.Mutex
	err    error
	answer func(p *Platform, in gateway.Inbound)

	rows        map[int64]gateway.Outbound
	held        map[int64]bool
	delivered   map[int64]int // Delivered reports per row
	redelivered chan string   // each Redeliver's session key
	accepted    int           // messages recorded (not duplicates)
}

var _ testGateway = (*fakeSink)(nil)

// testGateway is what the tests stand in for the gateway with: the Sink
// Run delivers to and the sides Config takes.
type testGateway interface {
	gateway.Sink
	ApprovalDecider
	QuestionAnswerer
	DeliveryReporter
}

// PendingApprovals: the plain fake asks for none.
func (s *fakeSink) PendingApprovals(string) []gateway.PendingApproval { return nil }

// Decide: nothing is pending.
func (s *fakeSink) Decide(_, _, _, _ string) error { return gateway.ErrApprovalNotFound }

// PendingQuestions: the plain fake asks none.
func (s *fakeSink) PendingQuestions(string) []gateway.PendingQuestion { return nil }

// AnswerQuestion: nothing is asked.
func (s *fakeSink) AnswerQuestion(_, _ string, _ map[string][]string, _ string) error {
	return gateway.ErrQuestionNotFound
}

// lateGateway is the Config's gateway for a test whose fake is built after
// the platform (it answers through it): it forwards to the fake, set
// before Run.
type lateGateway struct{ g testGateway }

func (l *lateGateway) PendingApprovals(key string) []gateway.PendingApproval {
	return l.g.PendingApprovals(key)
}

func (l *lateGateway) Decide(key, id, decision, sender string) error {
	return l.g.Decide(key, id, decision, sender)
}

func (l *lateGateway) PendingQuestions(key string) []gateway.PendingQuestion {
	return l.g.PendingQuestions(key)
}

func (l *lateGateway) AnswerQuestion(key, id string, answers map[string][]string, sender string) error {
	return l.g.AnswerQuestion(key, id, answers, sender)
}

func (l *lateGateway) Delivered(ctx context.Context, id int64, platformMessageID string) error {
	return l.g.Delivered(ctx, id, platformMessageID)
}

func (l *lateGateway) Redeliver(ctx context.Context, key string) error {
	return l.g.Redeliver(ctx, key)
}

func newFakeSink(p *Platform, st *store.Store, answer func(*Platform, gateway.Inbound)) *fakeSink {
	return &fakeSink{p: p, st: st, answer: answer, rows: map[int64]gateway.Outbound{}, held: map[int64]bool{},
		delivered: map[int64]int{}, redelivered: make(chan string, 100)}
}

func (s *fakeSink) Deliver(ctx context.Context, in gateway.Inbound) (bool, error) {
	s.mu.Lock()
	err := s.err
	s.mu.Unlock()
	if err != nil {
		return false, err
	}
	_, dup, err := s.st.RecordInbound(ctx, store.Inbound{Platform: PlatformName, MessageID: in.MessageID,
		SessionKey: in.Address.SessionKey(), SenderID: in.SenderID, Text: in.Text})
	if err != nil || dup {
		return dup, err
	}
	s.mu.Lock()
	s.accepted++
	s.mu.Unlock()
	go s.answer(s.p, in)
	return false, nil
}

// enqueue sends out as outbox row id, as the gateway's deliverer would.
func (s *fakeSink) enqueue(id int64, out gateway.Outbound) {
	out.ID = id
	s.mu.Lock()
	s.rows[id] = out
	s.mu.Unlock()
	s.sendRow(id)
}

func (s *fakeSink) sendRow(id int64) {
	s.mu.Lock()
	out := s.rows[id]
	s.mu.Unlock()
	_, err := s.p.Send(context.Background(), out)
	s.mu.Lock()
	defer s.mu.Unlock()
	// Like HoldOutbox: a row reported delivered meanwhile stays delivered.
	if errors.Is(err, gateway.ErrDeferred) && s.delivered[id] == 0 {
		s.held[id] = true
	}
}

func (s *fakeSink) Delivered(_ context.Context, id int64, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delivered[id]++
	delete(s.held, id)
	return nil
}

func (s *fakeSink) Redeliver(_ context.Context, key string) error {
	s.mu.Lock()
	var ids []int64
	for id := range s.held {
		if s.rows[id].Address.SessionKey() == key {
			ids = append(ids, id)
		}
	}
	for _, id := range ids {
		delete(s.held, id)
	}
	s.mu.Unlock()
	slices.Sort(ids)
	for _, id := range ids {
		s.sendRow(id)
	}
	s.redelivered <- key
	return nil
}

func (s *fakeSink) deliveries(id int64) (delivered int, held bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.delivered[id], s.held[id]
}

func echo(p *Platform, in gateway.Inbound) {
	p.Send(context.Background(), gateway.Outbound{Address: in.Address, Kind: gateway.OutReply, Text: "re: " + in.Text,
		InReplyTo: in.MessageID, Turn: &gateway.TurnInfo{ThreadID: "th", TurnID: "tu", Status: "completed"}})
}

func startAPI(t *testing.T, token string, answer func(*Platform, gateway.Inbound)) (*Platform, *fakeSink) {
	t.Helper()
	var sink *fakeSink
	p := startAPIWith(t, token, func(p *Platform, st *store.Store) testGateway {
		sink = newFakeSink(p, st, answer)
		return sink
	})
	return p, sink
}

// startAPIWith runs the platform over a store in a temp directory with the
// sink newSink builds for it.
func startAPIWith(t *testing.T, token string, newSink func(*Platform, *store.Store) testGateway) *Platform {
	t.Helper()
	return runAPI(t, Config{Token: token}, newSink)
}

// runAPI runs the platform on 127.0.0.1 with cfg over a store in a temp
// directory (a test logger and a /healthz route unless cfg sets them).
func runAPI(t *testing.T, cfg Config, newSink func(*Platform, *store.Store) testGateway) *Platform {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "gatewayd.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg.Listen = "127.0.0.1:0"
	cfg.Answers = st
	if cfg.Logger == nil {
		cfg.Logger = zaptest.NewLogger(t)
	}
	if cfg.Handlers == nil {
		cfg.Handlers = map[string]http.Handler{"/healthz": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte("ok"))
		})}
	}
	late := &lateGateway{}
	cfg.Approvals, cfg.Questions, cfg.Deliveries = late, late, late
	p := New(cfg)
	sink := newSink(p, st)
	late.g = sink
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, sink) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-p.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	}
	return p
}

func post(t *testing.T, p *Platform, lane, token, body string, hdr ...string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest("POST", "http://"+p.Addr()+"/api/lanes/"+lane+"/messages", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp, out
}

func TestPostMessageValidationAndAuth(t *testing.T) {
	t.Parallel()
	p, _ := startAPI(t, "s3cret", echo)
	tests := []struct {
		name, lane, token, body string
		want                    int
		wantErr                 string
	}{
		{"no token", "demo", "", `{"text":"hi"}`, 401, "bearer"},
		{"wrong token", "demo", "guess", `{"text":"hi"}`, 401, "bearer"},
		{"empty text", "demo", "s3cret", `{"text":"  "}`, 400, "empty"},
		{"oversized text", "demo", "s3cret", `{"text":"` + strings.Repeat("x", MaxTextBytes+1) + `"}`, 400, "exceeds"},
		{"bad json", "demo", "s3cret", `text=hi`, 400, "JSON"},
		{"bad lane", "de%20mo", "s3cret", `{"text":"hi"}`, 400, "lane name"},
		{"ok", "demo", "s3cret", `{"text":"hi","user":"ann"}`, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp, body := post(t, p, tt.lane, tt.token, tt.body)
			if resp.StatusCode != tt.want {
				t.Fatalf("status %d, want %d (%v)", resp.StatusCode, tt.want, body)
			}
			if tt.wantErr != "" && !strings.Contains(body["error"].(string), tt.wantErr) {
				t.Errorf("error %q, want it to mention %q", body["error"], tt.wantErr)
			}
			if tt.want == 200 && (body["reply"] != "re: hi" || body["thread_id"] != "th" || body["turn_id"] != "tu" || body["status"] != "completed") {
				t.Errorf("response %v", body)
			}
		})
	}
	resp, err := http.Get("http://" + p.Addr() + "/healthz")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("extra handler: %v %v", resp, err)
	}
}

func TestShutdownErrors(t *testing.T) {
	t.Parallel()
	p, sink := startAPI(t, "", echo)
	sink.mu.Lock()
	sink.err = gateway.ErrShuttingDown
	sink.mu.Unlock()
	if resp, _ := post(t, p, "demo", "", `{"text":"hi"}`); resp.StatusCode != 503 {
		t.Errorf("shutting down: %d, want 503", resp.StatusCode)
	}
}

func TestNoticesAttachToWaitingRequest(t *testing.T) {
	t.Parallel()
	p, _ := startAPI(t, "", func(p *Platform, in gateway.Inbound) {
		p.Send(context.Background(), gateway.Outbound{Address: in.Address, Kind: gateway.OutNotice, Text: "thread replaced"})
		p.Send(context.Background(), gateway.Outbound{Address: gateway.Address{ChatID: "other"}, Kind: gateway.OutNotice, Text: "not mine"})
		echo(p, in)
	})
	_, body := post(t, p, "demo", "", `{"text":"hi"}`)
	if n, _ := body["notices"].([]any); len(n) != 1 || n[0] != "thread replaced" {
		t.Errorf("notices %v, want only this lane's notice", body["notices"])
	}
}

// A notice sent while no request of the lane is open (the cut-off notice
// after a restart) is deferred, rides on the lane's next response exactly
// once, and is reported delivered only then.
func TestNoticeWithoutListenerIsHeldForNextRequest(t *testing.T) {
	t.Parallel()
	p, sink := startAPI(t, "", echo)
	sink.enqueue(1, gateway.Outbound{Address: laneAddress("demo"), Kind: gateway.OutNotice, Text: "cut off"})
	if n, held := sink.deliveries(1); n != 0 || !held {
		t.Fatalf("with no request open: delivered %d, held %v; want deferred", n, held)
	}
	_, body := post(t, p, "other", "", `{"text":"hi"}`)
	if body["notices"] != nil {
		t.Errorf("another lane got %v", body["notices"])
	}
	_, body = post(t, p, "demo", "", `{"text":"hi"}`)
	if n, _ := body["notices"].([]any); len(n) != 1 || n[0] != "cut off" || body["reply"] != "re: hi" {
		t.Errorf("first request after the notice: %v", body)
	}
	if _, body = post(t, p, "demo", "", `{"text":"again"}`); body["notices"] != nil {
		t.Errorf("the notice came twice: %v", body["notices"])
	}
	if n, held := sink.deliveries(1); n != 1 || held {
		t.Errorf("after the response: delivered %d, held %v; want reported once", n, held)
	}
}

// A notice attached to a request whose client went away before its answer
// goes back to the lane and comes with the next request.
func TestNoticeOfAbandonedRequestComesWithNextRequest(t *testing.T) {
	t.Parallel()
	attached := make(chan struct{})
	var sink *fakeSink
	p, sink := startAPI(t, "", func(p *Platform, in gateway.Inbound) {
		if in.Text != "hang" {
			echo(p, in)
			return
		}
		sink.enqueue(7, gateway.Outbound{Address: in.Address, Kind: gateway.OutNotice, Text: "thread replaced"})
		close(attached) // and never answer
	})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "POST", "http://"+p.Addr()+"/api/lanes/demo/messages", strings.NewReader(`{"text":"hang"}`))
		req.Header.Set("Content-Type", "application/json")
		_, err := http.DefaultClient.Do(req)
		errc <- err
	}()
	<-attached
	// Carried by the open request: deferred (held in the outbox), not
	// delivered until its response is written.
	if n, held := sink.deliveries(7); n != 0 || !held {
		t.Fatalf("attached to the open request: delivered %d, held %v; want deferred", n, held)
	}
	cancel()
	<-errc
	if key := <-sink.redelivered; key != "v1:api:demo" {
		t.Fatalf("redelivered %q, want the lane", key)
	}
	if n, held := sink.deliveries(7); n != 0 || !held {
		t.Fatalf("after the client went away: delivered %d, held %v; want held again", n, held)
	}
	_, body := post(t, p, "demo", "", `{"text":"hi"}`)
	if n, _ := body["notices"].([]any); len(n) != 1 || n[0] != "thread replaced" {
		t.Errorf("next request's notices %v, want the notice once", body["notices"])
	}
	if n, _ := sink.deliveries(7); n != 1 {
		t.Errorf("delivered %d times, want 1", n)
	}
}

func TestSSEStreamsDeltasThenDone(t *testing.T) {
	t.Parallel()
	p, _ := startAPI(t, "", func(p *Platform, in gateway.Inbound) {
		ctx := context.Background()
		id, _ := p.Send(ctx, gateway.Outbound{Address: in.Address, Kind: gateway.OutPreview, Text: "Hel", InReplyTo: in.MessageID})
		p.Edit(ctx, in.Address, id, "Hello")
		p.Send(ctx, gateway.Outbound{Address: in.Address, Kind: gateway.OutReply, Text: "Hello world", InReplyTo: in.MessageID,
			EditID: id, Turn: &gateway.TurnInfo{ThreadID: "th", TurnID: "tu", Status: "completed"}})
	})
	req, _ := http.NewRequest("POST", "http://"+p.Addr()+"/api/lanes/demo/messages", strings.NewReader(`{"text":"hi"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var text strings.Builder
	var done Response
	sc := bufio.NewScanner(resp.Body)
	event := ""
	for sc.Scan() {
		line := sc.Text()
		if e, ok := strings.CutPrefix(line, "event: "); ok {
			event = e
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		switch event {
		case "delta":
			var s string
			json.Unmarshal([]byte(data), &s)
			text.WriteString(s)
		case "done":
			json.Unmarshal([]byte(data), &done)
		default:
			t.Errorf("unexpected event %q %s", event, data)
		}
	}
	if text.String() != "Hello world" || done.Reply != "Hello world" || done.Status != "completed" {
		t.Errorf("streamed %q, done %+v", text.String(), done)
	}
}

func TestCheckListen(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, listen, token string
		ok                  bool
	}{
		{"loopback v4", "127.0.0.1:0", "", true},
		{"loopback v6", "[::1]:80", "", true},
		{"localhost", "localhost:8080", "", true},
		{"public without token", "0.0.0.0:80", "", false},
		{"public with token", "0.0.0.0:80", "t", true},
		{"garbage", "nonsense", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := checkListen(tt.listen, tt.token); (err == nil) != tt.ok {
				t.Errorf("checkListen(%q) = %v, ok want %v", tt.listen, err, tt.ok)
			}
		})
	}
}
