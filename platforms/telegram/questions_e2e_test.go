package telegram_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

var databaseQuestion = codextest.AskedQuestion{ID: "db", Header: "Database",
	Question: "Which database should I use?", Options: []string{"SQLite", "PostgreSQL"}}

// questionMessage waits for the bot's message carrying button data.
func questionMessage(t *testing.T, srv *telegramtest.Server, chat int64, data string) telegramtest.Message {
	t.Helper()
	var found telegramtest.Message
	srv.WaitFor(60*time.Second, "the question with "+data, func() bool {
		for _, m := range srv.Messages(chat, 0) {
			if strings.Contains(m.Markup, `"`+data+`"`) {
				found = m
				return true
			}
		}
		return false
	})
	return found
}

// TestEndToEndPlanModeQuestionIsButtons: in a group, /plan puts the lane
// in Plan mode; the model's request_user_input question becomes a message
// with one button per option that pings Alice (a reply to her message);
// Bob's press is refused, Alice's answers it: the message shows the
// answer without buttons, and the model's follow-up carries the label. A
// second press finds nothing waiting.
func TestEndToEndPlanModeQuestionIsButtons(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	group := models.Chat{ID: -2004, Type: models.ChatTypeSupergroup, Title: "planning"}
	alice := models.User{ID: 1001, FirstName: "Alice"}
	bob := models.User{ID: 1002, FirstName: "Bob"}
	srv.Chat(group)
	world.Model.Respond(gatewaytest.AsksUser("which database", databaseQuestion))
	startStackWith(t, ctx, world, srv, gateway.Config{})
	srv.Text(group, alice, 0, "/plan", nil)
	srv.WaitFor(30*time.Second, "the /plan answer", func() bool {
		return countContaining(srv.Messages(group.ID, 0), "Plan mode is on") == 1
	})
	asked := srv.Text(group, alice, 0, "@gatewayd_test_bot which database fits?", nil)
	question := questionMessage(t, srv, group.ID, "question:q1:0:1")
	if !strings.Contains(question.Text, "Which database should I use?") || !strings.Contains(question.Text, "2. PostgreSQL — about PostgreSQL") {
		t.Errorf("question text = %q", question.Text)
	}
	if question.ReplyTo != asked.ID || question.Silent {
		t.Errorf("question replies to %d (silent %v), want a notifying reply to Alice's message %d", question.ReplyTo, question.Silent, asked.ID)
	}
	srv.Press(bob, question, "question:q1:0:1")
	srv.WaitFor(30*time.Second, "Bob's refusal", func() bool {
		return countContaining(srv.Messages(group.ID, 0), "Only Alice or an admin can decide this; question q1 is still waiting") == 1
	})
	srv.Press(alice, question, "question:q1:0:1")
	srv.WaitFor(60*time.Second, "the answer reaching the model", func() bool {
		return countContaining(srv.Messages(group.ID, 0), `TOOL OUTPUT: {"answers":{"db":{"answers":["PostgreSQL"]}}}`) == 1
	})
	for _, m := range srv.Messages(group.ID, 0) {
		if m.ID == question.ID && (!strings.Contains(m.Text, "✅ PostgreSQL — Alice") || strings.Contains(m.Markup, "question:")) {
			t.Errorf("answered question reads %q with markup %s, want the answer and no buttons", m.Text, m.Markup)
		}
	}
	srv.Press(alice, question, "question:q1:0:0")
	srv.WaitFor(30*time.Second, "the second press's answer", func() bool {
		return countContaining(srv.Messages(group.ID, 0), "Question q1 is no longer waiting") == 1
	})
}

// TestEndToEndQuestionAnsweredByReplyAndPlanOff: a question open to
// other answers (isOther; codex requires options on every question) is
// answered by replying to it with text; after /plan off the model's
// request_user_input is refused by codex (Default mode), so no question
// is asked.
func TestEndToEndQuestionAnsweredByReplyAndPlanOff(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	dm, alice := aliceDM(srv)
	world.Model.Respond(gatewaytest.AsksUser("name it", codextest.AskedQuestion{ID: "name",
		Question: "What should the service be called?", Options: []string{"api", "gateway"}, IsOther: true}))
	startStackWith(t, ctx, world, srv, gateway.Config{})
	srv.Text(dm, alice, 0, "/plan name it please", nil)
	var question telegramtest.Message
	srv.WaitFor(60*time.Second, "the free-text question", func() bool {
		for _, m := range srv.Messages(dm.ID, 0) {
			if strings.Contains(m.Text, "What should the service be called?") && strings.Contains(m.Text, "reply to this message with another answer") {
				question = m
				return true
			}
		}
		return false
	})
	srv.Text(dm, alice, 0, "gatewayd-prod", &models.Message{ID: question.ID, From: &telegramtest.Bot, Chat: dm})
	srv.WaitFor(60*time.Second, "the typed answer reaching the model", func() bool {
		return countContaining(srv.Messages(dm.ID, 0), `"answers":["gatewayd-prod"]`) == 1
	})
	srv.Text(dm, alice, 0, "/plan off", nil)
	srv.WaitFor(30*time.Second, "the /plan off answer", func() bool {
		return countContaining(srv.Messages(dm.ID, 0), "Plan mode is off") == 1
	})
	srv.Text(dm, alice, 0, "name it again", nil)
	srv.WaitFor(60*time.Second, "codex's refusal in Default mode", func() bool {
		return countContaining(srv.Messages(dm.ID, 0), "request_user_input is unavailable in Default mode") == 1
	})
	if n := countContaining(srv.Messages(dm.ID, 0), "What should the service be called?"); n != 1 {
		t.Errorf("the question was asked %d times, want once (not in Default mode)", n)
	}
}

// TestEndToEndUnansweredQuestionTimesOut: a question nobody answers within
// codex.question_timeout is given up: the lane is told, the message says
// so, the model goes on with no answer, and a late press finds nothing.
func TestEndToEndUnansweredQuestionTimesOut(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	dm, alice := aliceDM(srv)
	world.Model.Respond(gatewaytest.AsksUser("which database", databaseQuestion))
	startStackWith(t, ctx, world, srv, gateway.Config{QuestionTimeout: 2 * time.Second})
	srv.Text(dm, alice, 0, "/plan which database?", nil)
	question := questionMessage(t, srv, dm.ID, "question:q1:0:0")
	srv.WaitFor(60*time.Second, "the timeout notice and the model going on", func() bool {
		msgs := srv.Messages(dm.ID, 0)
		return countContaining(msgs, "No answer to question q1 within 2s: Codex goes on without it.") == 1 &&
			countContaining(msgs, `TOOL OUTPUT: {"answers":{}}`) == 1
	})
	for _, m := range srv.Messages(dm.ID, 0) {
		if m.ID == question.ID && !strings.Contains(m.Text, "Not answered in time") {
			t.Errorf("expired question reads %q", m.Text)
		}
	}
	srv.Press(alice, question, "question:q1:0:0")
	srv.WaitFor(30*time.Second, "the late press's answer", func() bool {
		return countContaining(srv.Messages(dm.ID, 0), "Question q1 is no longer waiting") == 1
	})
}
