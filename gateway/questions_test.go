package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// askRun is a turn that asks qs with request_user_input and answers with
// the answers codex would get, as JSON, and whether they were given.
func askRun(g **Gateway, qs ...codex.Question) func(ctx context.Context, thread, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
	return func(ctx context.Context, thread, text string, _ codex.TurnEvents) (codex.TurnResult, error) {
		if !strings.Contains(text, "ask") {
			return codex.TurnResult{Status: codex.TurnCompleted, Text: "no question: " + text}, nil
		}
		answers, ok := (*g).AskUser(ctx, codex.UserInputRequest{ThreadID: thread, TurnID: "u1", ItemID: "call_ask", Questions: qs})
		raw, _ := json.Marshal(answers)
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "answers " + string(raw) + " " + map[bool]string{true: "given", false: "not given"}[ok]}, nil
	}
}

var (
	dbQuestion = codex.Question{ID: "db", Header: "Database", Question: "Which database?",
		Options: []codex.QuestionOption{{Label: "SQLite", Description: "a file"}, {Label: "PostgreSQL", Description: "a server"}}}
	nameQuestion  = codex.Question{ID: "name", Question: "Its name?", Options: []codex.QuestionOption{{Label: "api"}}, IsOther: true}
	tokenQuestion = codex.Question{ID: "token", Header: "Token", Question: "Your deploy token?",
		Options: []codex.QuestionOption{{Label: "none"}}, IsOther: true, IsSecret: true}
)

// prompt waits for the message asking a question.
func prompt(t *testing.T, p *fakePlatform) Outbound {
	t.Helper()
	for {
		if o := p.next(t); o.Question != nil {
			return o
		}
	}
}

func TestQuestionsAnsweredByTextOnceEach(t *testing.T) {
	h := newHarness(t)
	h.cx.run = askRun(&h.g, dbQuestion, nameQuestion)
	h.start(t)
	h.send(t, "a", "m1", "please ask")
	first, second := prompt(t, h.p), prompt(t, h.p)
	if first.Question.Index != 0 || second.Question.Index != 1 || first.Question.Pending.ID != "q1" {
		t.Fatalf("prompts %+v, %+v", first.Question, second.Question)
	}
	for _, want := range []string{"❓ Database: Which database? (question q1, 1 of 2)", "2. PostgreSQL — a server", "reply with its number"} {
		if !strings.Contains(first.Text, want) {
			t.Errorf("first question lacks %q:\n%s", want, first.Text)
		}
	}
	if !strings.Contains(second.Text, "reply to this message with another answer") {
		t.Errorf("open question does not invite a typed answer:\n%s", second.Text)
	}
	// An option's number answers the question that offers only options.
	h.send(t, "a", "a1", "2")
	waitFor(t, "the first answer", func() bool {
		p := h.g.PendingQuestions("v1:test:a")
		return len(p) == 1 && len(p[0].Answered) == 1 && p[0].Answered[0] == "db"
	})
	for _, tc := range []struct {
		name    string
		lane    string
		answers map[string][]string
		want    error
	}{
		{"again", "v1:test:a", map[string][]string{"db": {"SQLite"}}, ErrQuestionAnswered},
		{"blank", "v1:test:a", map[string][]string{"name": {"  "}}, ErrBadAnswer},
		{"unknown question", "v1:test:a", map[string][]string{"nope": {"x"}}, ErrBadAnswer},
		{"nothing", "v1:test:a", nil, ErrBadAnswer},
		{"other lane", "v1:test:b", map[string][]string{"name": {"x"}}, ErrQuestionWrongLane},
	} {
		if err := h.g.AnswerQuestion(tc.lane, "q1", tc.answers, "u1"); !errors.Is(err, tc.want) {
			t.Errorf("%s: AnswerQuestion = %v, want %v", tc.name, err, tc.want)
		}
	}
	h.send(t, "a", "a2", "gatewayd-prod")
	got := h.p.replyTo(t, "m1")
	if want := `answers {"db":["PostgreSQL"],"name":["gatewayd-prod"]} given`; got.Text != want {
		t.Errorf("the turn got %q, want %q", got.Text, want)
	}
	if err := h.g.AnswerQuestion("v1:test:a", "q1", map[string][]string{"name": {"x"}}, "u1"); !errors.Is(err, ErrQuestionNotFound) {
		t.Errorf("after completion: %v", err)
	}
	// The answers are recorded (a redelivery is a duplicate) and closed:
	// neither became a turn of its own.
	if dup, err := h.g.Deliver(context.Background(), Inbound{Address: apiAddr("a"), MessageID: "a2", SenderID: "u1", Text: "gatewayd-prod"}); err != nil || !dup {
		t.Errorf("redelivered answer: duplicate %v, %v", dup, err)
	}
	for _, id := range []string{"a1", "a2"} {
		if st := h.st.inboundStatus("a", id); st != store.InboundDone {
			t.Errorf("answer %s is %q, want done", id, st)
		}
	}
	if turns := h.cx.turnTexts(); len(turns) != 1 {
		t.Errorf("turns %q, want only the asking one", turns)
	}
}

func TestQuestionInAGroupIsTheRequestersAndSecretsStayPrivate(t *testing.T) {
	h := newHarness(t)
	h.cx.run = askRun(&h.g, tokenQuestion, dbQuestion)
	h.start(t)
	room := Address{Platform: "test", Kind: LaneGroup, ChatID: "g"}
	deliver := func(in Inbound) {
		t.Helper()
		in.Address = room
		if _, err := h.g.Deliver(context.Background(), in); err != nil {
			t.Fatal(err)
		}
	}
	deliver(Inbound{MessageID: "m1", SenderID: "u1", DisplayName: "Ana", Text: "please ask", Mentioned: true})
	var notices []string
	var asked Outbound
	for asked.Question == nil || len(notices) == 0 { // the notice comes through the outbox, in its own time
		o := h.p.next(t)
		if o.Question != nil {
			asked = o
		} else {
			notices = append(notices, o.Text)
		}
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "secret question (Token)") {
		t.Errorf("notices before the question: %q", notices)
	}
	if asked.Question.Index != 1 || asked.Ping != "u1" || asked.ReplyTo != "m1" || !strings.Contains(asked.Text, "For Ana (or an admin) to answer") {
		t.Errorf("asked %+v ping %q reply to %q:\n%s", asked.Question, asked.Ping, asked.ReplyTo, asked.Text)
	}
	deliver(Inbound{MessageID: "p1", SenderID: "u2", Callback: "question:q1:1:0"})
	if o := h.p.next(t); o.Text != "Only Ana or an admin can decide this; question q1 is still waiting." {
		t.Errorf("a bystander's press answered %q", o.Text)
	}
	deliver(Inbound{MessageID: "p2", SenderID: "u3", SenderAdmin: true, Callback: "question:q1:1:0"})
	got := h.p.replyTo(t, "m1")
	if want := `answers {"db":["SQLite"]} given`; got.Text != want {
		t.Errorf("the turn got %q, want %q (the secret question unanswered)", got.Text, want)
	}
	deliver(Inbound{MessageID: "p3", SenderID: "u1", Callback: "question:q1:1:1"})
	if o := h.p.next(t); !strings.Contains(o.Text, "Question q1 is no longer waiting") {
		t.Errorf("a press after the answer got %q", o.Text)
	}
}

func TestSecretAnswerIsNotStored(t *testing.T) {
	h := newHarness(t)
	h.cx.run = askRun(&h.g, tokenQuestion)
	h.start(t)
	h.send(t, "a", "m1", "please ask")
	prompt(t, h.p)
	h.send(t, "a", "s1", "hunter2")
	if got := h.p.replyTo(t, "m1"); got.Text != `answers {"token":["hunter2"]} given` {
		t.Errorf("the turn got %q", got.Text)
	}
	if text := h.st.inboundText("a", "s1"); strings.Contains(text, "hunter2") || text == "" {
		t.Errorf("the secret answer's row holds %q", text)
	}
}

func TestStopGivesUpAQuestion(t *testing.T) {
	h := newHarness(t)
	h.cx.run = askRun(&h.g, dbQuestion)
	h.start(t)
	h.send(t, "a", "m1", "please ask")
	prompt(t, h.p)
	h.send(t, "a", "c1", "/stop")
	waitFor(t, "the question to be given up", func() bool { return len(h.g.PendingQuestions("v1:test:a")) == 0 })
	if got := h.p.replyTo(t, "m1"); got.Text != "answers {} given" {
		t.Errorf("the stopped turn got %q", got.Text)
	}
}

func TestQuestionTimesOut(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.QuestionTimeout = 50 * time.Millisecond })
	h.cx.run = askRun(&h.g, dbQuestion)
	h.start(t)
	h.send(t, "a", "m1", "please ask")
	prompt(t, h.p)
	got, notices := collect(t, h.p, "m1")
	if got["m1"].Text != "answers {} not given" {
		t.Errorf("the turn got %q", got["m1"].Text)
	}
	if len(notices) != 1 || notices[0] != "No answer to question q1 within 50ms: Codex goes on without it." {
		t.Errorf("notices %q", notices)
	}
}

func TestPlanModeIsTheLanesUntilOff(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Thread.Model = "gpt-test" })
	h.start(t)
	h.send(t, "a", "c1", "/plan")
	if o := h.p.replyTo(t, "c1"); !strings.Contains(o.Text, "Plan mode is on") {
		t.Errorf("/plan answered %q", o.Text)
	}
	h.send(t, "a", "m1", "first")
	h.p.replyTo(t, "m1")
	h.send(t, "a", "c2", "/status")
	if o := h.p.replyTo(t, "c2"); !strings.Contains(o.Text, "Plan mode: on") {
		t.Errorf("/status lacks the mode:\n%s", o.Text)
	}
	h.send(t, "a", "c3", "/plan off")
	if o := h.p.replyTo(t, "c3"); !strings.Contains(o.Text, "Plan mode is off") {
		t.Errorf("/plan off answered %q", o.Text)
	}
	h.send(t, "a", "m2", "second")
	h.p.replyTo(t, "m2")
	h.send(t, "a", "c4", "/plan sketch it")
	if o := h.p.replyTo(t, "c4"); o.Text != "ECHO: sketch it" && !strings.Contains(o.Text, "sketch it") {
		t.Errorf("/plan TEXT answered %q", o.Text)
	}
	h.cx.mu.Lock()
	defer h.cx.mu.Unlock()
	if want := []string{codex.ModePlan, codex.ModeDefault, codex.ModePlan}; strings.Join(h.cx.modes, ",") != strings.Join(want, ",") {
		t.Errorf("turn modes %q, want %q", h.cx.modes, want)
	}
}

// inboundRow is the row of message id in the API lane named lane.
func (s *fakeStore) inboundRow(lane, id string) store.InboundRow {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, row := range s.inbound {
		if row.SessionKey == "v1:test:"+lane && row.MessageID == id {
			return row
		}
	}
	return store.InboundRow{}
}

func (s *fakeStore) inboundStatus(lane, id string) string { return s.inboundRow(lane, id).State }
func (s *fakeStore) inboundText(lane, id string) string   { return s.inboundRow(lane, id).Text }

func (c *fakeCodex) turnTexts() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.turns...)
}

// everyAnswered is the fake platform where every message waits for its own
// answer, as the API lane's requests do.
type everyAnswered struct{ *fakePlatform }

func (everyAnswered) AnswersEveryMessage() {}

// A typed answer that was taken answers its own message too where every
// message waits for one (the API lane's POST would hang otherwise).
func TestTypedAnswerGetsAReceiptWhereEveryMessageWaits(t *testing.T) {
	h := newHarness(t)
	h.g.AddPlatform(everyAnswered{h.p})
	h.cx.run = askRun(&h.g, dbQuestion)
	h.start(t)
	h.send(t, "a", "m1", "please ask")
	prompt(t, h.p)
	h.send(t, "a", "a1", "PostgreSQL")
	if got := h.p.replyTo(t, "a1"); got.Text != answerReceipt {
		t.Errorf("the answer's own reply = %q, want the receipt", got.Text)
	}
	if got := h.p.replyTo(t, "m1"); !strings.Contains(got.Text, `"db":["PostgreSQL"]`) {
		t.Errorf("the turn got %q", got.Text)
	}
}
