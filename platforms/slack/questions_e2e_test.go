package slack_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/slack/slacktest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// TestEndToEndQuestionDecidedByRequesterOnly: in Plan mode a question
// with seven options becomes a select; another allowed member's choice
// is refused by the gateway (the question waits), a stranger's press is
// refused by the adapter (an ephemeral), and the requester's choice
// reaches the model and removes the options.
func TestEndToEndQuestionDecidedByRequesterOnly(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	fake, world := newFake(t), gatewaytest.NewWorld(t)
	days := []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	world.Model.Respond(gatewaytest.AsksUser("release day", codextest.AskedQuestion{ID: "day", Header: "Release",
		Question: "Which day do we release?", Options: days}))
	startStack(t, ctx, world, fake, gateway.Config{})
	root := fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "!plan", MentionBot: true})
	if !fake.WaitFor(30*time.Second, threadHas(fake, root, "Plan mode is on")) {
		t.Fatalf("no answer to !plan: %+v", fake.Thread(channel, root))
	}
	fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "pick the release day", ThreadTS: root})
	var question slacktest.Message
	if !fake.WaitFor(60*time.Second, func() bool {
		for _, m := range fake.Thread(channel, root) {
			if b := slacktest.Buttons(m); len(b) == 7 && b[0].Select {
				question = m
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no select for the question: %+v", fake.Thread(channel, root))
	}
	if _, err := fake.PressButton(channel, question.TS, slacktest.Buttons(question)[2].Value, stranger); err != nil {
		t.Fatal(err)
	}
	if !fake.WaitFor(30*time.Second, func() bool { return len(fake.Ephemerals()) == 1 }) {
		t.Fatal("the stranger was not told off")
	}
	if _, err := fake.PressButton(channel, question.TS, slacktest.Buttons(question)[2].Value, allowed2); err != nil {
		t.Fatal(err)
	}
	if !fake.WaitFor(30*time.Second, threadHas(fake, root, "or an admin can decide this")) {
		t.Fatalf("another member's choice was not refused: %+v", fake.Thread(channel, root))
	}
	if _, err := fake.PressButton(channel, question.TS, slacktest.Buttons(question)[2].Value, allowed); err != nil {
		t.Fatal(err)
	}
	if !fake.WaitFor(60*time.Second, threadHas(fake, root, `"Wednesday"`)) {
		t.Fatalf("the requester's choice did not reach the model: %+v", fake.Thread(channel, root))
	}
	if m, _ := fake.Message(channel, question.TS); len(slacktest.Buttons(m)) != 0 {
		t.Errorf("the answered question still offers %+v", slacktest.Buttons(m))
	}
}
