package discord_test

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
)

// answerButtons are n answer buttons of question 1 of request q7, as the
// gateway makes them.
func answerButtons(n int) []gateway.Button {
	out := make([]gateway.Button, n)
	for i := range out {
		out[i] = gateway.Button{ID: "question:q7:1:" + strconv.Itoa(i), Label: "Option " + strconv.Itoa(i+1)}
	}
	return out
}

func buttonIDs(buttons []gateway.Button) []string {
	ids := make([]string, len(buttons))
	for i, b := range buttons {
		ids[i] = b.ID
	}
	return ids
}

// askQuestion sends the question's message with n options to lane.
func askQuestion(t *testing.T, r *running, lane gateway.Address, n int) (string, []gateway.Button, error) {
	t.Helper()
	buttons := answerButtons(n)
	out := gateway.Outbound{Address: lane, Kind: gateway.OutNotice, Text: "❓ Which one? (question q7, 2 of 2)",
		Question: &gateway.QuestionPrompt{Pending: gateway.PendingQuestion{ID: "q7"}, Index: 1}}
	id, err := r.a.SendButtons(context.Background(), out, buttons)
	return id, buttons, err
}

// An answered question's message keeps its text and loses its buttons:
// EditButtons without buttons sends an empty components list, which
// Discord takes as "remove them"; Edit leaves them alone.
func TestEditButtonsWithoutButtonsRemovesThem(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		buttons []gateway.Button
	}{{name: "nil"}, {name: "empty", buttons: []gateway.Button{}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, channel)
			r := start(t, baseConfig(t, srv))
			ctx := context.Background()
			id, err := r.a.SendButtons(ctx, gateway.Outbound{Address: channelAddr, Text: "Pick one"},
				[]gateway.Button{{ID: "question:q1:0:0", Label: "Yes"}, {ID: "question:q1:0:1", Label: "No"}})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.a.Edit(ctx, channelAddr, id, "Pick one (edited)"); err != nil {
				t.Fatal(err)
			}
			if e := srv.Edits(); len(e) != 1 || e[0].ComponentsSent || len(srv.Components(channel, id)) != 2 {
				t.Fatalf("Edit: edits %+v, components %+v; want the buttons left alone", e, srv.Components(channel, id))
			}
			if err := r.a.EditButtons(ctx, channelAddr, id, "✅ Yes", tc.buttons); err != nil {
				t.Fatalf("EditButtons without buttons: %v", err)
			}
			if e := srv.Edits(); len(e) != 2 || !e[1].ComponentsSent || len(e[1].Components) != 0 {
				t.Fatalf("edits %+v; want the last to send an empty components list", e)
			}
			msg, _ := srv.LastBotMessage(channel)
			if msg.ID != id || msg.Content != "✅ Yes" || len(msg.Components) != 0 {
				t.Fatalf("message now %+v; want the answer without buttons", msg)
			}
		})
	}
}

// A question with more options than a row of buttons holds is asked with
// a select menu whose options are the buttons; up to five stay buttons,
// and so do more than five that are not a question's.
func TestQuestionOptionsBeyondARowAreASelectMenu(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	r := start(t, baseConfig(t, srv))

	id, buttons, err := askQuestion(t, r, channelAddr, 7)
	if err != nil {
		t.Fatalf("7 options: %v", err)
	}
	msg, _ := srv.LastBotMessage(channel)
	sel, ok := msg.Select()
	if msg.ID != id || !ok || len(msg.Components) != 1 || len(msg.ButtonIDs) != 0 {
		t.Fatalf("7 options sent as %+v; want one select menu", msg.Components)
	}
	if sel.CustomID != "qselect:q7:1" || sel.Placeholder != "Choose an answer" || !slices.Equal(sel.Values(), buttonIDs(buttons)) {
		t.Fatalf("select %+v; want custom_id qselect:q7:1, the placeholder and the button ids as values", sel)
	}
	if sel.Options[6].Label != "Option 7" {
		t.Errorf("option label %q, want the button's", sel.Options[6].Label)
	}

	if _, buttons, err = askQuestion(t, r, channelAddr, 3); err != nil {
		t.Fatalf("3 options: %v", err)
	}
	if msg, _ = srv.LastBotMessage(channel); !slices.Equal(msg.ButtonIDs, buttonIDs(buttons)) || len(msg.Components) != 3 {
		t.Fatalf("3 options sent as %+v; want three buttons", msg.Components)
	}

	buttons = answerButtons(7)
	if _, err := r.a.SendButtons(context.Background(), gateway.Outbound{Address: channelAddr, Text: "not a question"}, buttons); err != nil {
		t.Fatal(err)
	}
	if msg, _ = srv.LastBotMessage(channel); !slices.Equal(msg.ButtonIDs, buttonIDs(buttons)) {
		t.Fatalf("7 buttons without a question sent as %+v; want buttons", msg.Components)
	}
}

// Discord's limits: 25 options, labels of 100 characters.
func TestQuestionSelectMenuLimits(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	r := start(t, baseConfig(t, srv))
	if _, _, err := askQuestion(t, r, channelAddr, 25); err != nil {
		t.Fatalf("25 options: %v", err)
	}
	before := len(srv.Sent(channel))
	if _, _, err := askQuestion(t, r, channelAddr, 26); !errors.Is(err, gateway.ErrPermanent) {
		t.Fatalf("26 options: err %v, want ErrPermanent", err)
	}
	if n := len(srv.Sent(channel)); n != before {
		t.Fatalf("26 options: %d messages sent", n-before)
	}

	buttons := answerButtons(6)
	buttons[2].Label = strings.Repeat("é", 150)
	buttons[3].Label = ""
	out := gateway.Outbound{Address: channelAddr, Text: "Which?", Question: &gateway.QuestionPrompt{Pending: gateway.PendingQuestion{ID: "q8"}}}
	if _, err := r.a.SendButtons(context.Background(), out, buttons); err != nil {
		t.Fatalf("long and empty labels: %v", err)
	}
	msg, _ := srv.LastBotMessage(channel)
	sel, _ := msg.Select()
	if long := sel.Options[2].Label; utf8.RuneCountInString(long) != 100 || !strings.HasSuffix(long, "…") {
		t.Errorf("a 150-character label became %q; want it cut to 100 with …", long)
	}
	if got := sel.Options[3].Label; got != "4" {
		t.Errorf("an empty label became %q; want the option's number", got)
	}
}

// A choice in the menu reaches the gateway as the press of the button it
// stands for, from the lane the message was sent to (a per-user lane
// here, so only its user may choose).
func TestSelectChoiceIsDeliveredAsItsButton(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	cfg := baseConfig(t, srv)
	cfg.PerUserChannels = true
	r := start(t, cfg)
	lane := gateway.Address{Platform: "discord", Kind: gateway.LaneChannel, ChatID: channel, UserID: allowed}
	msgID, buttons, err := askQuestion(t, r, lane, 7)
	if err != nil {
		t.Fatal(err)
	}
	srv.ChooseOption(channel, msgID, "qselect:q7:1", allowed2, buttons[1].ID) // not this lane's user
	srv.ChooseOption(channel, msgID, "qselect:q7:1", allowed)                 // nothing chosen
	choice := srv.ChooseOption(channel, msgID, "qselect:q7:1", allowed, buttons[4].ID)
	in := r.sink.next(t)
	if in.MessageID != choice || in.Callback != buttons[4].ID || in.Text != "" || in.Address != lane {
		t.Fatalf("delivery %+v; want the lane user's choice %q", in, buttons[4].ID)
	}
	sentinel(t, srv, r)
	resp := srv.Responses()
	deferred := int(discordgo.InteractionResponseDeferredMessageUpdate)
	if len(resp) != 3 || !resp[0].Ephemeral || resp[1].Type != deferred || resp[2].Type != deferred {
		t.Fatalf("responses %+v; want a refusal, then two acknowledgements", resp)
	}
}

// Discord says in member.permissions what a member may do in the
// interaction's channel: Manage Channels or Administrator makes them an
// admin for the gateway. A message carries no permissions: it never does.
func TestSenderAdminFollowsTheMembersPermissions(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	srv.AddDM("20", allowed)
	r := start(t, baseConfig(t, srv))
	msgID, buttons, err := askQuestion(t, r, channelAddr, 7)
	if err != nil {
		t.Fatal(err)
	}
	srv.SetPermissions(allowed, discordgo.PermissionViewChannel|discordgo.PermissionSendMessages|discordgo.PermissionManageChannels)
	for _, tc := range []struct {
		name  string
		act   func() string
		admin bool
	}{
		{name: "press by a channel manager", admin: true,
			act: func() string { return srv.PressButton(channel, msgID, buttons[0].ID, allowed) }},
		{name: "choice by a channel manager", admin: true,
			act: func() string { return srv.ChooseOption(channel, msgID, "qselect:q7:1", allowed, buttons[1].ID) }},
		{name: "slash command by a channel manager", admin: true,
			act: func() string { return srv.SlashCommand(channel, "status", allowed) }},
		{name: "press by an ordinary member",
			act: func() string { return srv.PressButton(channel, msgID, buttons[0].ID, allowed2) }},
		{name: "press by an administrator", admin: true, act: func() string {
			srv.SetPermissions(allowed2, discordgo.PermissionAdministrator)
			return srv.PressButton(channel, msgID, buttons[0].ID, allowed2)
		}},
		{name: "slash command in a DM", act: func() string { return srv.SlashCommand("20", "status", allowed) }},
		{name: "message by a channel manager", act: func() string {
			return srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, Content: "3", MentionBot: true})
		}},
	} {
		id := tc.act()
		if in := r.sink.next(t); in.MessageID != id || in.SenderAdmin != tc.admin {
			t.Errorf("%s: delivery %s with SenderAdmin %v; want %s with %v", tc.name, in.MessageID, in.SenderAdmin, id, tc.admin)
		}
	}
}
