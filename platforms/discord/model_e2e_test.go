package discord_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/discord"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
	"github.com/gatewayd/gatewayd/store"
)

// waitSent waits for the bot's message in ch whose content contains text.
func waitSent(t *testing.T, srv *discordtest.Server, ch, text string) discordtest.SentMessage {
	t.Helper()
	var found discordtest.SentMessage
	if !srv.WaitFor(60*time.Second, func() bool {
		for _, m := range srv.Sent(ch) {
			if strings.Contains(m.Content, text) {
				found = m
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no bot message containing %q: %+v", text, srv.Sent(ch))
	}
	return found
}

// TestEndToEndModelAndEffortButtons: the /model and /effort slash commands
// (real codex: model/list's presets) answer with buttons; pressing a model
// and the effort high makes the next model request carry both.
func TestEndToEndModelAndEffortButtons(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := newServer(t, channel), gatewaytest.NewWorld(t)
	world.Start(t, ctx, gateway.Config{}, func(st *store.Store) []gateway.Platform {
		dc, err := discord.New(discord.Config{Token: discordtest.Token, APIURL: srv.URL(),
			AllowedUsers: []string{allowed}, Cursor: st, Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatalf("discord.New: %v", err)
		}
		return []gateway.Platform{dc}
	})

	srv.SlashCommand(channel, "model", allowed)
	list := waitSent(t, srv, channel, "Choose with /model NAME")
	if len(list.ButtonIDs) == 0 || !strings.HasPrefix(list.ButtonIDs[0], "model:") {
		t.Fatalf("/model buttons %q, want model:<id> buttons", list.ButtonIDs)
	}
	chosen := strings.TrimPrefix(list.ButtonIDs[0], "model:")
	srv.PressButton(channel, list.ID, list.ButtonIDs[0], allowed)
	waitSent(t, srv, channel, "Model: "+chosen+". The next turn uses it")

	srv.SlashCommand(channel, "effort", allowed)
	levels := waitSent(t, srv, channel, "Choose with /effort LEVEL")
	if !strings.Contains(strings.Join(levels.ButtonIDs, " "), "effort:high") {
		t.Fatalf("/effort buttons %q, want effort:high among them", levels.ButtonIDs)
	}
	srv.PressButton(channel, levels.ID, "effort:high", allowed)
	waitSent(t, srv, channel, "Effort: high. The next turn uses it.")

	srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, MentionBot: true, Content: "which MODEL now?"})
	waitSent(t, srv, channel, "ECHO: [u"+allowed+"]: which MODEL now?")
	req, ok := world.Model.LastRequestWith("which MODEL now?")
	if !ok {
		t.Fatal("no model request carries the message")
	}
	if req.Model() != chosen || req.ReasoningEffort() != "high" {
		t.Errorf("model request: model %q effort %q, want %q and high", req.Model(), req.ReasoningEffort(), chosen)
	}
}
