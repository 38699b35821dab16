package api

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/store"
)

// deciderSink is the fake sink with the gateway's approval side: a message
// containing "RUN" asks for one command approval in its lane, waits for the
// decision and answers "decision: <d>", as a chat-approvals turn does.
type deciderSink struct {
	*fakeSink
	asked chan gateway.PendingApproval // each question, as it is sent

	mu      sync.Mutex
	seq     int
	pending map[string]gateway.PendingApproval
	answers map[string]chan string
	decided []string // "<key> <id> <decision> <user>"
}

var _ ApprovalDecider = (*deciderSink)(nil)

func newDeciderSink(p *Platform, st *store.Store) *deciderSink {
	d := &deciderSink{asked: make(chan gateway.PendingApproval, 4),
		pending: map[string]gateway.PendingApproval{}, answers: map[string]chan string{}}
	d.fakeSink = newFakeSink(p, st, d.turn)
	return d
}

func (d *deciderSink) turn(p *Platform, in gateway.Inbound) {
	if !strings.Contains(in.Text, "RUN") {
		echo(p, in)
		return
	}
	info, answer := d.ask(in.Address.SessionKey())
	p.Send(context.Background(), gateway.Outbound{Address: in.Address, Kind: gateway.OutNotice,
		Text: "Codex asks to run a command (approval " + info.ID + ")", Approval: &info})
	d.asked <- info
	decision := <-answer
	p.Send(context.Background(), gateway.Outbound{Address: in.Address, Kind: gateway.OutReply, Text: "decision: " + decision,
		InReplyTo: in.MessageID, Turn: &gateway.TurnInfo{ThreadID: "th", TurnID: "tu", Status: "completed"}})
}

func (d *deciderSink) ask(key string) (gateway.PendingApproval, chan string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seq++
	info := gateway.PendingApproval{ID: "a" + strconv.Itoa(d.seq), SessionKey: key, Kind: "command",
		Command: "touch marker", Cwd: "/work", Reason: "to test", ThreadID: "th", TurnID: "tu", ItemID: "call_1",
		Asked: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	answer := make(chan string, 1)
	d.pending[info.ID], d.answers[info.ID] = info, answer
	return info, answer
}

func (d *deciderSink) PendingApprovals(key string) []gateway.PendingApproval {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []gateway.PendingApproval
	for _, p := range d.pending {
		if p.SessionKey == key {
			out = append(out, p)
		}
	}
	return out
}

// Decide follows the gateway's rules: known id, same lane, answered once.
func (d *deciderSink) Decide(key, id, decision, user string) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	p, ok := d.pending[id]
	switch {
	case !ok:
		return gateway.ErrApprovalNotFound
	case p.SessionKey != key:
		return gateway.ErrApprovalWrongLane
	}
	delete(d.pending, id)
	d.decided = append(d.decided, strings.Join([]string{key, id, decision, user}, " "))
	d.answers[id] <- decision
	return nil
}

func (d *deciderSink) decisions() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.decided...)
}

func startDecider(t *testing.T, token string) (*Platform, *deciderSink) {
	t.Helper()
	var d *deciderSink
	p := startAPIWith(t, token, func(p *Platform, st *store.Store) testGateway {
		d = newDeciderSink(p, st)
		return d
	})
	return p, d
}

func call(t *testing.T, p *Platform, method, path, token, body string) (int, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(method, "http://"+p.Addr()+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: answer is not JSON: %v", method, path, err)
	}
	return resp.StatusCode, out
}

// postAsync posts a message to lane demo on its own goroutine (no
// t.Fatal there) and delivers the decoded answer.
func postAsync(t *testing.T, p *Platform, token, body string) <-chan map[string]any {
	done := make(chan map[string]any, 1)
	go func() {
		var out map[string]any
		defer func() { done <- out }()
		req, _ := http.NewRequest("POST", "http://"+p.Addr()+"/api/lanes/demo/messages", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Errorf("post: %v", err)
			return
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
			t.Errorf("post: answer is not JSON: %v", err)
		}
	}()
	return done
}

// waitAsked returns the next approval question the fake sent.
func waitAsked(t *testing.T, d *deciderSink) gateway.PendingApproval {
	t.Helper()
	select {
	case info := <-d.asked:
		return info
	case <-time.After(10 * time.Second):
		t.Fatal("no approval was asked")
		return gateway.PendingApproval{}
	}
}

func TestDecisionRouteStatusesAndAuth(t *testing.T) {
	t.Parallel()
	p, d := startDecider(t, "s3cret")
	done := postAsync(t, p, "s3cret", `{"text":"RUN it"}`)
	info := waitAsked(t, d)
	route := "/api/lanes/demo/approvals/" + info.ID
	tests := []struct {
		name, path, token, body string
		want                    int
		wantErr                 string
	}{
		{"no token", route, "", `{"decision":"accept"}`, 401, "bearer"},
		{"bad json", route, "s3cret", `accept`, 400, "JSON"},
		{"bad decision", route, "s3cret", `{"decision":"approved"}`, 400, "decision must be"},
		{"bad lane", "/api/lanes/de%20mo/approvals/" + info.ID, "s3cret", `{"decision":"accept"}`, 400, "lane name"},
		{"unknown id", "/api/lanes/demo/approvals/a9", "s3cret", `{"decision":"accept"}`, 404, "not pending"},
		{"another lane", "/api/lanes/other/approvals/" + info.ID, "s3cret", `{"decision":"accept"}`, 403, "another lane"},
		{"accept", route, "s3cret", `{"decision":"acceptForSession","user":"ann"}`, 200, ""},
		{"twice", route, "s3cret", `{"decision":"decline"}`, 404, "not pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := call(t, p, "POST", tt.path, tt.token, tt.body)
			if code != tt.want {
				t.Fatalf("status %d, want %d (%v)", code, tt.want, body)
			}
			if tt.wantErr != "" && !strings.Contains(body["error"].(string), tt.wantErr) {
				t.Errorf("error %q, want it to mention %q", body["error"], tt.wantErr)
			}
			if tt.want == 200 && (body["id"] != info.ID || body["decision"] != "acceptForSession") {
				t.Errorf("answer %v", body)
			}
		})
	}
	if got := d.decisions(); len(got) != 1 || got[0] != "v1:api:demo "+info.ID+" acceptForSession ann" {
		t.Errorf("decisions reaching the gateway %q, want exactly the accepted one", got)
	}
	if body := <-done; body["reply"] != "decision: acceptForSession" {
		t.Errorf("the turn answered %v", body)
	}
}

// A JSON client blocked on its message finds the open request with GET,
// decides it, and its answer lists the approval it was asked.
func TestApprovalInJSONAnswerAndList(t *testing.T) {
	t.Parallel()
	p, d := startDecider(t, "")
	done := postAsync(t, p, "", `{"text":"RUN it"}`)
	info := waitAsked(t, d)
	if code, body := call(t, p, "GET", "/api/lanes/other/approvals", "", ""); code != 200 || len(body["approvals"].([]any)) != 0 {
		t.Errorf("another lane lists %d %v, want an empty list", code, body)
	}
	code, body := call(t, p, "GET", "/api/lanes/demo/approvals", "", "")
	list, _ := body["approvals"].([]any)
	if code != 200 || len(list) != 1 {
		t.Fatalf("pending list %d %v", code, body)
	}
	listed := list[0].(map[string]any)
	if listed["id"] != info.ID || listed["command"] != "touch marker" || listed["decide"] != "/api/lanes/demo/approvals/"+info.ID {
		t.Errorf("listed %v", listed)
	}
	if code, body := call(t, p, "POST", listed["decide"].(string), "", `{"decision":"decline"}`); code != 200 {
		t.Fatalf("decline %d %v", code, body)
	}
	answer := <-done
	if answer["reply"] != "decision: decline" {
		t.Errorf("reply %v", answer["reply"])
	}
	asked, _ := answer["approvals"].([]any)
	if len(asked) != 1 || asked[0].(map[string]any)["id"] != info.ID || asked[0].(map[string]any)["kind"] != "command" {
		t.Errorf("answer's approvals %v, want the one asked", answer["approvals"])
	}
	if d.decisions()[0] != "v1:api:demo "+info.ID+" decline local" {
		t.Errorf("decision %q, want the default user local", d.decisions())
	}
}

// An SSE client sees the request as an "approval" event while the turn
// waits, decides it over the route, and the stream then ends with the turn.
func TestApprovalEventInStream(t *testing.T) {
	t.Parallel()
	p, d := startDecider(t, "")
	req, _ := http.NewRequest("POST", "http://"+p.Addr()+"/api/lanes/demo/messages", strings.NewReader(`{"text":"RUN it"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var seen []string
	var done Response
	readSSE(t, resp.Body, func(event, data string) {
		seen = append(seen, event)
		switch event {
		case "approval":
			var a Approval
			if err := json.Unmarshal([]byte(data), &a); err != nil {
				t.Fatalf("approval event %s: %v", data, err)
			}
			if a.Kind != "command" || a.Command != "touch marker" || a.Cwd != "/work" || a.Reason != "to test" ||
				len(a.Decisions) != 4 {
				t.Errorf("approval event %+v", a)
			}
			if code, body := call(t, p, "POST", a.Decide, "", `{"decision":"accept"}`); code != 200 {
				t.Errorf("accept %d %v", code, body)
			}
		case "done":
			json.Unmarshal([]byte(data), &done)
		}
	})
	if strings.Join(seen, ",") != "notice,approval,delta,done" {
		t.Errorf("events %q, want notice, approval, delta, done", seen)
	}
	if done.Reply != "decision: accept" || len(done.Approvals) != 1 || len(d.decisions()) != 1 {
		t.Errorf("done %+v, decisions %q", done, d.decisions())
	}
}

// readSSE calls on for every event of an SSE body until it ends.
func readSSE(t *testing.T, body io.Reader, on func(event, data string)) {
	t.Helper()
	sc := bufio.NewScanner(body)
	event := ""
	for sc.Scan() {
		if e, ok := strings.CutPrefix(sc.Text(), "event: "); ok {
			event = e
			continue
		}
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			on(event, data)
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		t.Errorf("reading the stream: %v", err)
	}
}

// Run refuses a config without one of the gateway's sides, naming it:
// there is no gateway that lacks them, so no route answers for one.
func TestRunRefusesConfigWithoutTheGatewaysSides(t *testing.T) {
	t.Parallel()
	late := &lateGateway{}
	full := Config{Listen: "127.0.0.1:0", Answers: &store.Store{}, Approvals: late, Questions: late, Deliveries: late}
	tests := []struct {
		name string
		drop func(*Config)
		want string
	}{
		{name: "answers", drop: func(c *Config) { c.Answers = nil }, want: "Config.Answers"},
		{name: "approvals", drop: func(c *Config) { c.Approvals = nil }, want: "Config.Approvals"},
		{name: "questions", drop: func(c *Config) { c.Questions = nil }, want: "Config.Questions"},
		{name: "deliveries", drop: func(c *Config) { c.Deliveries = nil }, want: "Config.Deliveries"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := full
			tt.drop(&cfg)
			err := New(cfg).Run(context.Background(), &fakeSink{})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run = %v, want a refusal naming %s", err, tt.want)
			}
		})
	}
}

// An approval shows what it would allow beyond its command; one that
// widens the lane's boundary offers no acceptForSession.
func TestApprovalShowsWhatItAllows(t *testing.T) {
	plain := newApproval("demo", gateway.PendingApproval{ID: "a1", Kind: "fileChange", GrantRoot: "/w/src",
		Files: []string{"/w/src/a.go (update)"}})
	if plain.GrantRoot != "/w/src" || len(plain.Files) != 1 || strings.Join(plain.Decisions, ",") != "accept,acceptForSession,decline,cancel" {
		t.Errorf("plain approval %+v", plain)
	}
	wide := newApproval("demo", gateway.PendingApproval{ID: "a2", Kind: "command", Command: "curl x", Network: "x",
		Escalation: "reach the network, which the sandbox blocks"})
	if wide.Network != "x" || wide.Escalation == "" || strings.Join(wide.Decisions, ",") != "accept,decline,cancel" {
		t.Errorf("widening approval %+v, want it shown and no acceptForSession", wide)
	}
}
