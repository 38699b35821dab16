package slack_test

import (
	"context"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/slack/slacktest"
)

// TestEndToEndForkOpensAThread: "!fork <title>" in a thread posts a new
// top-level message in the channel; its thread is a new lane, told where
// it came from, whose first model request carries the parent's context
// on a Codex thread of its own, and which needs no mention.
func TestEndToEndForkOpensAThread(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	fake, world := newFake(t), gatewaytest.NewWorld(t)
	stack := startStack(t, ctx, world, fake, gateway.Config{})
	root := fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "remember KIWI", MentionBot: true})
	waitReply(t, fake, channel, "remember KIWI")
	stack.WaitIdle(t, 60*time.Second)
	fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "!fork kiwi experiments", ThreadTS: root})
	var top slacktest.Message
	if !fake.WaitFor(60*time.Second, func() bool {
		for _, m := range fake.Sent(channel) {
			if m.ThreadTS == "" {
				top = m
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no top-level message for the fork: %+v", fake.Sent(channel))
	}
	if !fake.WaitFor(60*time.Second, threadHas(fake, top.TS, "Forked from")) {
		t.Fatalf("the fork's thread was not told where it came from: %+v", fake.Thread(channel, top.TS))
	}
	fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "which fruit in the fork?", ThreadTS: top.TS})
	if !fake.WaitFor(60*time.Second, threadHas(fake, top.TS, "which fruit in the fork?")) {
		t.Fatalf("no answer in the fork: %+v", fake.Thread(channel, top.TS))
	}
	req, ok := world.Model.LastRequestWith("which fruit in the fork?")
	parent, okParent := world.Model.LastRequestWith("remember KIWI")
	if !ok || !okParent {
		t.Fatal("a model request is missing")
	}
	if !contains(req.InputText(), "KIWI") {
		t.Error("the fork's first request lacks the parent thread's context")
	}
	if req.ThreadID() == parent.ThreadID() {
		t.Errorf("the fork ran on the parent's Codex thread %s", req.ThreadID())
	}
}
