package discord_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
)

// TestEndToEndForkStartsAThreadInTheChannel: /fork in a thread starts a
// new thread in its channel, named by the title, which is told where it
// came from; the new thread's first model request carries the parent's
// context on a Codex thread of its own. /fork in a DM says it cannot.
func TestEndToEndForkStartsAThreadInTheChannel(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	srv, world := newServer(t, channel), gatewaytest.NewWorld(t)
	srv.AddThread("11", channel, "5")
	srv.AddDM("99", allowed)
	say := func(where, text string) {
		srv.Post(discordtest.Post{ChannelID: where, AuthorID: allowed, Content: text, MentionBot: true})
	}
	waitText := func(where, want string) {
		t.Helper()
		if !srv.WaitFor(60*time.Second, func() bool {
			for _, m := range srv.BotMessages(where) {
				if strings.Contains(m.Content, want) {
					return true
				}
			}
			return false
		}) {
			t.Fatalf("no message containing %q in %s: %+v", want, where, srv.BotMessages(where))
		}
	}
	stack := startStack(t, ctx, world, srv)
	// The streamed preview shows the answer before its turn ends; /fork
	// then would be told to wait for the answer, not fork.
	waitIdle := func() { t.Helper(); stack.WaitIdle(t, 60*time.Second) }
	say("11", "remember KIWI")
	waitText("11", "ECHO: [u"+allowed+"]: remember KIWI")
	waitIdle()
	say("11", "/fork kiwi experiments")
	waitText("11", `Forked into "kiwi experiments"`)
	made := srv.ThreadsMade()
	if len(made) != 1 || made[0].ParentID != channel || made[0].Name != "kiwi experiments" {
		t.Fatalf("threads made %+v, want one named by the title in channel %s", made, channel)
	}
	fork := made[0].ID
	waitText(fork, "Forked from")

	say(fork, "which fruit in the fork?")
	waitText(fork, "which fruit in the fork?")
	req, ok := world.Model.LastRequestWith("which fruit in the fork?")
	parent, okParent := world.Model.LastRequestWith("remember KIWI")
	if !ok || !okParent {
		t.Fatal("a model request is missing")
	}
	if !strings.Contains(req.InputText(), "KIWI") {
		t.Error("the fork's first request lacks the parent thread's context")
	}
	if req.ThreadID() == parent.ThreadID() {
		t.Errorf("the fork ran on the parent's Codex thread %s", req.ThreadID())
	}

	say("99", "hello from a DM")
	waitText("99", "ECHO: hello from a DM")
	waitIdle()
	say("99", "/fork")
	waitText("99", "Cannot fork here")
	if n := len(srv.ThreadsMade()); n != 1 {
		t.Errorf("a DM's /fork started a thread (%d in all)", n)
	}
}
