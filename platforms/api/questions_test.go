package api

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// askerSink is the fake sink with the gateway's question side: a message
// containing "ASK" asks one request of two questions in its lane (one
// notice per question, as the gateway sends them), waits until both are
// answered and answers "answers: color=... name=...".
type askerSink struct {
	*fakeSink
	asked chan gateway.PendingQuestion // each request, once all its questions are sent

	mu       sync.Mutex
	pending  map[string]*fakeQuestion
	answered []string // "<key> <id> <qid>=<answer>,... <user>" per accepted call
}

type fakeQuestion struct {
	info    gateway.PendingQuestion
	answers map[string][]string
	done    chan map[string][]string
}

var _ QuestionAnswerer = (*askerSink)(nil)

func newAskerSink(p *Platform, st *store.Store) *askerSink {
	a := &askerSink{asked: make(chan gateway.PendingQuestion, 4), pending: map[string]*fakeQuestion{}}
	a.fakeSink = newFakeSink(p, st, a.turn)
	return a
}

// twoQuestions are the request the fake asks: options only, then free text.
var twoQuestions = []codex.Question{
	{ID: "color", Header: "Colour", Question: "Which colour?", Options: []codex.QuestionOption{
		{Label: "Red", Description: "warm"}, {Label: "Blue"}}},
	{ID: "name", Question: "What name?", IsOther: true, IsSecret: true},
}

func (a *askerSink) turn(p *Platform, in gateway.Inbound) {
	if !strings.Contains(in.Text, "ASK") {
		echo(p, in)
		return
	}
	q := a.ask(in.Address.SessionKey())
	for i, question := range q.info.Questions {
		p.Send(context.Background(), gateway.Outbound{Address: in.Address, Kind: gateway.OutNotice,
			Text:     "❓ " + question.Question + " (question " + q.info.ID + ")",
			Question: &gateway.QuestionPrompt{Pending: q.info, Index: i}})
	}
	a.asked <- q.info
	answers := <-q.done
	p.Send(context.Background(), gateway.Outbound{Address: in.Address, Kind: gateway.OutReply,
		Text:      "answers: color=" + strings.Join(answers["color"], "+") + " name=" + strings.Join(answers["name"], "+"),
		InReplyTo: in.MessageID, Turn: &gateway.TurnInfo{ThreadID: "th", TurnID: "tu", Status: "completed"}})
}

func (a *askerSink) ask(key string) *fakeQuestion {
	a.mu.Lock()
	defer a.mu.Unlock()
	info := gateway.PendingQuestion{ID: fmt.Sprintf("q%d", len(a.pending)+1), SessionKey: key, ThreadID: "th", TurnID: "tu",
		ItemID: "call_q", Questions: twoQuestions, Asked: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	q := &fakeQuestion{info: info, answers: map[string][]string{}, done: make(chan map[string][]string, 1)}
	a.pending[info.ID] = q
	return q
}

func (a *askerSink) PendingQuestions(key string) []gateway.PendingQuestion {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []gateway.PendingQuestion
	for _, q := range a.pending {
		if q.info.SessionKey == key {
			out = append(out, q.snapshot())
		}
	}
	return out
}

func (q *fakeQuestion) snapshot() gateway.PendingQuestion {
	info := q.info
	info.Answered = nil
	for _, question := range q.info.Questions {
		if q.answers[question.ID] != nil {
			info.Answered = append(info.Answered, question.ID)
		}
	}
	return info
}

// AnswerQuestion follows the gateway's rules: known id, same lane, only
// the requester (here: anyone but "mallory"), each question answered
// once and with one of its options unless it takes text; a request
// leaves when its last question is answered.
func (a *askerSink) AnswerQuestion(key, id string, answers map[string][]string, user string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	q, ok := a.pending[id]
	switch {
	case !ok:
		return gateway.ErrQuestionNotFound
	case q.info.SessionKey != key:
		return gateway.ErrQuestionWrongLane
	case user == "mallory":
		return &gateway.NotApproverError{Requester: "ann"}
	}
	if err := q.check(answers); err != nil {
		return err
	}
	var parts []string
	for qid, answer := range answers {
		q.answers[qid] = answer
		parts = append(parts, qid+"="+strings.Join(answer, "+"))
	}
	sort.Strings(parts)
	a.answered = append(a.answered, strings.Join([]string{key, id, strings.Join(parts, ","), user}, " "))
	if len(q.answers) == len(q.info.Questions) {
		delete(a.pending, id)
		q.done <- q.answers
	}
	return nil
}

func (q *fakeQuestion) check(answers map[string][]string) error {
	for qid, answer := range answers {
		i := slices.IndexFunc(q.info.Questions, func(c codex.Question) bool { return c.ID == qid })
		switch {
		case i < 0:
			return fmt.Errorf("%w: request %s has no question %q", gateway.ErrBadAnswer, q.info.ID, qid)
		case q.answers[qid] != nil:
			return fmt.Errorf("%w: %q", gateway.ErrQuestionAnswered, qid)
		case len(answer) == 0:
			return fmt.Errorf("%w: empty answer to %q", gateway.ErrBadAnswer, qid)
		}
		question := q.info.Questions[i]
		for _, s := range answer {
			if !question.IsOther && !slices.ContainsFunc(question.Options, func(o codex.QuestionOption) bool { return o.Label == s }) {
				return fmt.Errorf("%w: %q is not one of the options of %q", gateway.ErrBadAnswer, s, qid)
			}
		}
	}
	return nil
}

func (a *askerSink) calls() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.answered)
}

func startAsker(t *testing.T, token string) (*Platform, *askerSink) {
	t.Helper()
	var a *askerSink
	p := startAPIWith(t, token, func(p *Platform, st *store.Store) testGateway {
		a = newAskerSink(p, st)
		return a
	})
	return p, a
}

// waitQuestion returns the next request the fake asked.
func waitQuestion(t *testing.T, a *askerSink) gateway.PendingQuestion {
	t.Helper()
	select {
	case info := <-a.asked:
		return info
	case <-time.After(10 * time.Second):
		t.Fatal("no question was asked")
		return gateway.PendingQuestion{}
	}
}

func TestAnswerRouteStatusesAndAuth(t *testing.T) {
	t.Parallel()
	p, a := startAsker(t, "s3cret")
	done := postAsync(t, p, "s3cret", `{"text":"ASK me"}`)
	info := waitQuestion(t, a)
	route := "/api/lanes/demo/questions/" + info.ID
	tests := []struct {
		name, path, token, body string
		want                    int
		wantErr                 string
	}{
		{"no token", route, "", `{"answers":{"color":["Red"]}}`, 401, "bearer"},
		{"bad json", route, "s3cret", `Red`, 400, "body must be JSON"},
		{"answer not a list", route, "s3cret", `{"answers":{"color":"Red"}}`, 400, "body must be JSON"},
		{"no answers", route, "s3cret", `{"answers":{}}`, 400, "answers is empty"},
		{"bad lane", "/api/lanes/de%20mo/questions/" + info.ID, "s3cret", `{"answers":{"color":["Red"]}}`, 400, "lane name"},
		{"unknown id", "/api/lanes/demo/questions/q9", "s3cret", `{"answers":{"color":["Red"]}}`, 404, "not pending"},
		{"another lane", "/api/lanes/other/questions/" + info.ID, "s3cret", `{"answers":{"color":["Red"]}}`, 403, "another lane"},
		{"not the requester", route, "s3cret", `{"answers":{"color":["Red"]},"user":"mallory"}`, 403, "Only ann or an admin"},
		{"unknown question", route, "s3cret", `{"answers":{"size":["L"]}}`, 400, `not an answer to the question: request ` + info.ID + ` has no question "size"`},
		{"not an option", route, "s3cret", `{"answers":{"color":["Green"]}}`, 400, `"Green" is not one of the options`},
		{"too large", route, "s3cret", `{"answers":{"name":["` + strings.Repeat("x", maxAnswerBody) + `"]}}`, 413, strconv.Itoa(maxAnswerBody) + " bytes"},
		{"first question", route, "s3cret", `{"answers":{"color":["Blue"]},"user":"ann"}`, 200, ""},
		{"first again", route, "s3cret", `{"answers":{"color":["Red"]}}`, 409, `the question is already answered: "color"`},
		{"second question", route, "s3cret", `{"answers":{"name":["Zed"]}}`, 200, ""},
		{"after the last", route, "s3cret", `{"answers":{"name":["Zed"]}}`, 404, "not pending"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, body := call(t, p, "POST", tt.path, tt.token, tt.body)
			if code != tt.want {
				t.Fatalf("status %d, want %d (%v)", code, tt.want, body)
			}
			if tt.wantErr != "" {
				msg, _ := body["error"].(string)
				if !strings.Contains(msg, tt.wantErr) || strings.HasPrefix(msg, "gateway: ") {
					t.Errorf("error %q, want it to mention %q without the gateway: prefix", msg, tt.wantErr)
				}
			}
			if tt.want == 200 {
				qid := strings.Split(strings.TrimPrefix(tt.body, `{"answers":{"`), `"`)[0]
				if got, _ := body["answered"].([]any); body["id"] != info.ID || len(got) != 1 || got[0] != qid {
					t.Errorf("answer %v, want id %s and answered [%s]", body, info.ID, qid)
				}
			}
		})
	}
	want := []string{"v1:api:demo " + info.ID + " color=Blue ann", "v1:api:demo " + info.ID + " name=Zed local"}
	if got := a.calls(); !slices.Equal(got, want) {
		t.Errorf("answers reaching the gateway %q, want %q (the default user local)", got, want)
	}
	if body := <-done; body["reply"] != "answers: color=Blue name=Zed" {
		t.Errorf("the turn answered %v", body)
	}
}

// A JSON client blocked on its message finds the open request with GET,
// answers both questions at once, and its answer lists the request once
// (though each question came as its own notice).
func TestQuestionInJSONAnswerAndList(t *testing.T) {
	t.Parallel()
	p, a := startAsker(t, "")
	if code, body := call(t, p, "GET", "/api/lanes/demo/questions", "", ""); code != 200 || !isEmptyList(body["questions"]) {
		t.Errorf("before asking: %d %v, want an empty list", code, body)
	}
	done := postAsync(t, p, "", `{"text":"ASK me"}`)
	info := waitQuestion(t, a)
	if code, body := call(t, p, "GET", "/api/lanes/other/questions", "", ""); code != 200 || !isEmptyList(body["questions"]) {
		t.Errorf("another lane lists %d %v, want an empty list", code, body)
	}
	if code, body := call(t, p, "POST", "/api/lanes/demo/questions/"+info.ID, "", `{"answers":{"color":["Red"]}}`); code != 200 {
		t.Fatalf("answer color: %d %v", code, body)
	}
	var list struct{ Questions []Question }
	if code := getJSON(t, p, "/api/lanes/demo/questions", &list); code != 200 || len(list.Questions) != 1 {
		t.Fatalf("pending list %d %+v, want the request", code, list)
	}
	listed := list.Questions[0]
	checkQuestionShape(t, listed, info.ID)
	if !listed.Questions[0].Answered || listed.Questions[1].Answered {
		t.Errorf("answered flags %v %v, want color answered and name not", listed.Questions[0].Answered, listed.Questions[1].Answered)
	}
	if code, body := call(t, p, "POST", listed.Answer, "", `{"answers":{"name":["Zed"]},"user":"ann"}`); code != 200 {
		t.Fatalf("answer name: %d %v", code, body)
	}
	answer := <-done
	if answer["reply"] != "answers: color=Red name=Zed" {
		t.Errorf("reply %v", answer["reply"])
	}
	asked, _ := answer["questions"].([]any)
	if len(asked) != 1 || asked[0].(map[string]any)["id"] != info.ID {
		t.Errorf("answer's questions %v, want the one request once", answer["questions"])
	}
	if notices, _ := answer["notices"].([]any); len(notices) != 2 {
		t.Errorf("notices %v, want each question's text", answer["notices"])
	}
}

func isEmptyList(v any) bool {
	list, ok := v.([]any)
	return ok && len(list) == 0
}

func getJSON(t *testing.T, p *Platform, path string, into any) int {
	t.Helper()
	resp, err := http.Get("http://" + p.Addr() + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(into); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode
}

// checkQuestionShape checks the API's view of the fake's request.
func checkQuestionShape(t *testing.T, q Question, id string) {
	t.Helper()
	if q.ID != id || q.ThreadID != "th" || q.TurnID != "tu" || q.ItemID != "call_q" || q.Answer != "/api/lanes/demo/questions/"+id ||
		!q.Asked.Equal(time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)) || len(q.Questions) != 2 {
		t.Fatalf("question %+v", q)
	}
	color, name := q.Questions[0], q.Questions[1]
	if color.ID != "color" || color.Header != "Colour" || color.Question != "Which colour?" || color.IsOther || color.IsSecret ||
		len(color.Options) != 2 || color.Options[0] != (QuestionOption{Label: "Red", Description: "warm"}) || color.Options[1].Label != "Blue" {
		t.Errorf("first question %+v", color)
	}
	if name.ID != "name" || !name.IsOther || !name.IsSecret || name.Options == nil || len(name.Options) != 0 {
		t.Errorf("second question %+v, want free text, secret, options []", name)
	}
}

// An SSE client sees the request as one "question" event though each of
// its two questions comes as a notice, answers over the route, and the
// stream then ends with the turn.
func TestQuestionEventInStream(t *testing.T) {
	t.Parallel()
	p, a := startAsker(t, "")
	req, _ := http.NewRequest("POST", "http://"+p.Addr()+"/api/lanes/demo/messages", strings.NewReader(`{"text":"ASK me"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	count := map[string]int{}
	var done Response
	readSSE(t, resp.Body, func(event, data string) {
		count[event]++
		switch event {
		case "question":
			var q Question
			if err := json.Unmarshal([]byte(data), &q); err != nil {
				t.Fatalf("question event %s: %v", data, err)
			}
			checkQuestionShape(t, q, "q1")
			if code, body := call(t, p, "POST", q.Answer, "", `{"answers":{"color":["Red"],"name":["Zed"]}}`); code != 200 {
				t.Errorf("answer %d %v", code, body)
			}
		case "done":
			json.Unmarshal([]byte(data), &done)
		}
	})
	if count["question"] != 1 || count["notice"] != 2 || count["done"] != 1 {
		t.Errorf("events %v, want one question, two notices and done", count)
	}
	if done.Reply != "answers: color=Red name=Zed" || len(done.Questions) != 1 || len(a.calls()) != 1 {
		t.Errorf("done %+v, answers %q", done, a.calls())
	}
}

// Before Run, the routes answer 503 rather than failing.
func TestQuestionRoutesBeforeRunning(t *testing.T) {
	t.Parallel()
	p := New(Config{Listen: "127.0.0.1:0", Logger: zaptest.NewLogger(t)})
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	for _, r := range []struct{ method, body string }{{"GET", ""}, {"POST", `{"answers":{"color":["Red"]}}`}} {
		path := "/api/lanes/demo/questions"
		if r.method == "POST" {
			path += "/q1"
		}
		req, _ := http.NewRequest(r.method, srv.URL+path, strings.NewReader(r.body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var body map[string]string
		json.NewDecoder(resp.Body).Decode(&body)
		resp.Body.Close()
		if resp.StatusCode != 503 || !strings.Contains(body["error"], "not running") {
			t.Errorf("%s %s: %d %v, want 503", r.method, path, resp.StatusCode, body)
		}
	}
}
