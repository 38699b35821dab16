package discord_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestEndToEndPlanModeQuestionIsASelectMenu: in a thread, /plan puts the
// lane in Plan mode; a request_user_input question with seven options
// becomes a select menu that mentions the requester in a reply to their
// message. Another member's choice is refused until they manage the
// channel (an admin); then it answers, the menu goes, and the model's
// follow-up carries the chosen label.
func TestEndToEndPlanModeQuestionIsASelectMenu(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	srv, world := newServer(t, channel), gatewaytest.NewWorld(t)
	srv.AddThread("11", channel, "5")
	days := []string{"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"}
	world.Model.Respond(gatewaytest.AsksUser("release day", codextest.AskedQuestion{ID: "day", Header: "Release",
		Question: "Which day do we release?", Options: days}))
	startStack(t, ctx, world, srv)
	has := func(text string) func() bool {
		return func() bool {
			return slices.ContainsFunc(srv.BotMessages("11"), func(m discordtest.SentMessage) bool { return strings.Contains(m.Content, text) })
		}
	}
	srv.SlashCommand("11", "plan", allowed)
	if !srv.WaitFor(30*time.Second, has("Plan mode is on")) {
		t.Fatal("no answer to /plan")
	}
	asked := srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: "pick the release day", MentionBot: true})
	var question discordtest.SentMessage
	var menu discordtest.Component
	if !srv.WaitFor(60*time.Second, func() bool {
		for _, m := range srv.BotMessages("11") {
			if sel, ok := m.Select(); ok {
				question, menu = m, sel
				return true
			}
		}
		return false
	}) {
		t.Fatal("no select menu for the question")
	}
	if len(menu.Options) != 7 || menu.Options[6].Label != "Sunday" || !strings.HasPrefix(question.Content, "<@"+allowed+"> ") ||
		question.ReplyTo != asked {
		t.Errorf("question %q (reply to %q) with menu %+v, want 7 days mentioning the requester in a reply to %q",
			question.Content, question.ReplyTo, menu, asked)
	}
	srv.ChooseOption("11", question.ID, menu.CustomID, allowed2, menu.Options[2].Value)
	if !srv.WaitFor(30*time.Second, has("Only u"+allowed+" or an admin can decide this; question q1 is still waiting")) {
		t.Fatal("another member's choice was not refused")
	}
	srv.SetPermissions(allowed2, discordgo.PermissionManageChannels)
	srv.ChooseOption("11", question.ID, menu.CustomID, allowed2, menu.Options[2].Value)
	if !srv.WaitFor(60*time.Second, has(`TOOL OUTPUT: {"answers":{"day":{"answers":["Wednesday"]}}}`)) {
		t.Fatal("the admin's choice did not reach the model")
	}
	if left := srv.Components("11", question.ID); len(left) != 0 {
		t.Errorf("the answered question still offers %+v", left)
	}
}
