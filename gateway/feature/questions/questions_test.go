package questions

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

type reply struct {
	answers map[string][]string
	ok      bool
}

// asking is a host with the lane of thread "t1" and a request asked
// there: a question with two options, then one that takes text. Once the
// second is asked the first's message id is kept (they are asked in
// order), so a test waiting for both can see the first edited.
func asking(t *testing.T, ctx context.Context) (*exttest.Host, *exttest.Lane, ext.Questions, <-chan reply) {
	h := exttest.NewHost(t)
	h.Settings = ext.RequestSettings{QuestionTimeout: time.Minute}
	l := &exttest.Lane{Addr: chat.Address{Platform: "api", Kind: chat.LaneDM, ChatID: "a"}}
	h.Threads = map[string]ext.Lane{"t1": l}
	h.Asked = make(chan ext.Prompt, 2)
	h.Register(t, New())
	q := h.Questions()
	out := make(chan reply, 1)
	go func() {
		answers, ok := q.AskUser(ctx, codex.UserInputRequest{ThreadID: "t1", Questions: []codex.Question{
			{ID: "pick", Question: "Which one?", Options: []codex.QuestionOption{{Label: "Yes"}, {Label: "No"}}},
			{ID: "why", Question: "Why?"}}})
		out <- reply{answers, ok}
	}()
	return h, l, q, out
}

func TestPlainMessageAnswersByOptionNumber(t *testing.T) {
	ctx := t.Context()
	h, l, q, replied := asking(t, ctx)
	p := <-h.Asked
	<-h.Asked
	if p.Question == nil || p.Question.Pending.ID != "q1" || len(p.Buttons) != 2 || !strings.Contains(p.Text, "Which one?") {
		t.Fatalf("the question: %+v", p)
	}
	if _, ok := h.AnswerOf(chat.Inbound{Address: l.Addr, Text: "2", SenderID: "u1", Attachments: make([]chat.Attachment, 1)}); ok {
		t.Error("a message with a file was claimed as the answer")
	}
	a, ok := h.AnswerOf(chat.Inbound{Address: l.Addr, Text: "2", SenderID: "u1", SenderName: "Ana"})
	if !ok || a.Stored != "2" {
		t.Fatalf("the answer %+v, %v", a, ok)
	}
	if got := q.PendingQuestions(l.Key()); len(got) != 1 || len(got[0].Answered) != 0 {
		t.Errorf("pending before the answer is applied: %+v", got)
	}
	a.Apply(ctx)
	if got := q.PendingQuestions(l.Key()); len(got) != 1 || !slices.Equal(got[0].Answered, []string{"pick"}) {
		t.Errorf("pending after the first answer: %+v", got)
	}
	if err := q.AnswerQuestion(l.Key(), "q1", map[string][]string{"why": {"because"}}, "u1"); err != nil {
		t.Fatal(err)
	}
	r := <-replied
	if !r.ok || !slices.Equal(r.answers["pick"], []string{"No"}) || !slices.Equal(r.answers["why"], []string{"because"}) {
		t.Errorf("codex got %+v", r)
	}
	if e := h.Edits(); len(e) == 0 || e[0] != "m1: ❓ Which one?\n✅ No — Ana" {
		t.Errorf("edits: %q", e)
	}
	if err := q.AnswerQuestion(l.Key(), "q1", map[string][]string{"pick": {"Yes"}}, "u1"); !errors.Is(err, ext.ErrQuestionNotFound) {
		t.Errorf("a late answer: %v, want ErrQuestionNotFound", err)
	}
}

func TestAdapterAnswerIsCheckedWhole(t *testing.T) {
	ctx := t.Context()
	h, l, q, replied := asking(t, ctx)
	<-h.Asked
	<-h.Asked
	if err := q.AnswerQuestion(l.Key(), "q1", map[string][]string{"pick": {"Perhaps"}, "why": {"x"}}, "u1"); !errors.Is(err, ext.ErrBadAnswer) {
		t.Errorf("not an option: %v, want ErrBadAnswer", err)
	}
	if err := q.AnswerQuestion("v1:api:other", "q1", map[string][]string{"pick": {"Yes"}}, "u1"); !errors.Is(err, ext.ErrQuestionWrongLane) {
		t.Errorf("another lane: %v, want ErrQuestionWrongLane", err)
	}
	if err := q.AnswerQuestion(l.Key(), "q1", map[string][]string{"pick": {"yes"}, "why": {" x "}}, "u1"); err != nil {
		t.Fatal(err)
	}
	if r := <-replied; !r.ok || !slices.Equal(r.answers["pick"], []string{"yes"}) || !slices.Equal(r.answers["why"], []string{"x"}) {
		t.Errorf("codex got %+v", r)
	}
}

func TestStoppedLaneGivesUpItsQuestions(t *testing.T) {
	h, l, _, replied := asking(t, t.Context())
	<-h.Asked
	<-h.Asked
	h.Stop(l.Key())
	if r := <-replied; len(r.answers) != 0 {
		t.Errorf("codex got %+v, want no answers", r)
	}
	if e := h.Edits(); len(e) == 0 || e[0] != "m1: ❓ Which one?\nThe turn was stopped before an answer." {
		t.Errorf("edits: %q", e)
	}
}

func TestUnroutedQuestionIsNotAsked(t *testing.T) {
	h := exttest.NewHost(t)
	h.Register(t, New())
	if answers, ok := h.Questions().AskUser(context.Background(), codex.UserInputRequest{ThreadID: "nobody's",
		Questions: []codex.Question{{ID: "x", Question: "?"}}}); ok || answers != nil {
		t.Errorf("got %v, %v; want nothing", answers, ok)
	}
	if len(h.Prompts()) != 0 {
		t.Errorf("asked %+v", h.Prompts())
	}
}
