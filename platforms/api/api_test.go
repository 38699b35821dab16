package api

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway"
)

// fakeSink answers every message on its own goroutine through the
// platform, as the gateway's outbox would.
type fakeSink struct {
	p      *Platform
	mu     sync.Mutex
	seen   map[string]bool
	err    error
	answer func(p *Platform, in gateway.Inbound)
}

func (s *fakeSink) Deliver(ctx context.Context, in gateway.Inbound) error {
	_, err := s.DeliverChecked(ctx, in)
	return err
}

func (s *fakeSink) DeliverChecked(_ context.Context, in gateway.Inbound) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return false, s.err
	}
	if s.seen[in.MessageID] {
		return true, nil
	}
	s.seen[in.MessageID] = true
	go s.answer(s.p, in)
	return false, nil
}

func echo(p *Platform, in gateway.Inbound) {
	p.Send(context.Background(), gateway.Outbound{Address: in.Address, Kind: gateway.OutReply, Text: "re: " + in.Text,
		InReplyTo: in.MessageID, Turn: &gateway.TurnInfo{ThreadID: "th", TurnID: "tu", Status: "completed"}})
}

func startAPI(t *testing.T, token string, answer func(*Platform, gateway.Inbound)) (*Platform, *fakeSink) {
	t.Helper()
	var sink *fakeSink
	p := startAPIWith(t, token, func(p *Platform) gateway.Sink {
		sink = &fakeSink{p: p, seen: map[string]bool{}, answer: answer}
		return sink
	})
	return p, sink
}

// startAPIWith runs the platform with the sink newSink builds for it.
func startAPIWith(t *testing.T, token string, newSink func(*Platform) gateway.Sink) *Platform {
	t.Helper()
	return runAPI(t, Config{Token: token}, newSink)
}

// runAPI runs the platform on 127.0.0.1 with cfg (a test logger and a
// /healthz route unless cfg sets them).
func runAPI(t *testing.T, cfg Config, newSink func(*Platform) gateway.Sink) *Platform {
	t.Helper()
	cfg.Listen = "127.0.0.1:0"
	if cfg.Logger == nil {
		cfg.Logger = zaptest.NewLogger(t)
	}
	if cfg.Handlers == nil {
		cfg.Handlers = map[string]http.Handler{"/healthz": http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Write([]byte("ok"))
		})}
	}
	p := New(cfg)
	sink := newSink(p)
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

func TestDuplicateIDAndShutdownErrors(t *testing.T) {
	p, sink := startAPI(t, "", echo)
	if resp, _ := post(t, p, "demo", "", `{"text":"hi","id":"fixed-1"}`); resp.StatusCode != 200 {
		t.Fatalf("first post %d", resp.StatusCode)
	}
	if resp, body := post(t, p, "demo", "", `{"text":"hi","id":"fixed-1"}`); resp.StatusCode != 409 {
		t.Errorf("duplicate id: %d %v, want 409", resp.StatusCode, body)
	}
	sink.mu.Lock()
	sink.err = gateway.ErrShuttingDown
	sink.mu.Unlock()
	if resp, _ := post(t, p, "demo", "", `{"text":"hi"}`); resp.StatusCode != 503 {
		t.Errorf("shutting down: %d, want 503", resp.StatusCode)
	}
}

func TestNoticesAttachToWaitingRequest(t *testing.T) {
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
// after a restart) rides on the lane's next response, exactly once.
func TestNoticeWithoutListenerIsHeldForNextRequest(t *testing.T) {
	p, _ := startAPI(t, "", echo)
	cutOff := gateway.Outbound{Address: gateway.Address{Platform: "api", Kind: gateway.LaneAPI, ChatID: "demo"},
		Kind: gateway.OutNotice, Text: "cut off"}
	if _, err := p.Send(context.Background(), cutOff); err != nil {
		t.Fatalf("Send: %v", err)
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
	for i := 0; i < maxHeldPerLane+5; i++ {
		p.Send(context.Background(), cutOff)
	}
	if _, body = post(t, p, "demo", "", `{"text":"hi"}`); len(body["notices"].([]any)) != maxHeldPerLane {
		t.Errorf("held %d notices, want the bound %d", len(body["notices"].([]any)), maxHeldPerLane)
	}
}

func TestSSEStreamsDeltasThenDone(t *testing.T) {
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
