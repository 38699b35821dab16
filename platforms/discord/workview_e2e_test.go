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
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

// TestEndToEndWorkViewStatusMessage: with the real app-server and the fake
// Discord, a turn that runs a command posts ONE silent status message,
// edits it (the command, then its exit code) and collapses it to the
// summary line; the reply is a separate message.
func TestEndToEndWorkViewStatusMessage(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := newServer(t, channel), gatewaytest.NewWorld(t)
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp && strings.Contains(req.LastUserText(), "run the tool") {
			return codextest.Reply{ToolCall: codextest.ExecCommand("call_wv", "echo WORKVIEW")}
		}
		// The answer waits until the status message shows the exit code:
		// otherwise, on a loaded machine, the end-of-turn summary can
		// coalesce that edit away and the test would depend on timing.
		if _, followUp := req.ToolOutput(); followUp {
			srv.WaitFor(30*time.Second, func() bool { return editedWith(srv, "exit 0") })
		}
		return codextest.DefaultReply(req)
	})
	world.Start(t, ctx, gateway.Config{PreviewInterval: 100 * time.Millisecond}, func(st *store.Store) []gateway.Platform {
		dc, err := discord.New(discord.Config{Token: discordtest.Token, APIURL: srv.URL(),
			AllowedUsers: []string{allowed}, Cursor: st, Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatalf("discord.New: %v", err)
		}
		return []gateway.Platform{dc}
	})
	srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, MentionBot: true, Content: "please run the tool"})
	if !srv.WaitFor(60*time.Second, func() bool {
		statusID := ""
		for _, m := range srv.Sent(channel) {
			if m.Silent {
				statusID = m.ID
			}
		}
		replied, collapsed := false, false
		for _, m := range srv.BotMessages(channel) {
			replied = replied || strings.Contains(m.Content, "WORKVIEW")
			collapsed = collapsed || (m.ID == statusID && strings.HasPrefix(m.Content, "1 command, "))
		}
		return replied && collapsed
	}) {
		t.Fatalf("no reply and collapsed status message: %+v", srv.BotMessages(channel))
	}
	var silent []discordtest.SentMessage
	for _, m := range srv.Sent(channel) {
		if m.Silent {
			silent = append(silent, m)
		}
	}
	if len(silent) != 1 || !strings.Contains(silent[0].Content, "$ echo WORKVIEW") {
		t.Fatalf("silent messages %+v, want one status message naming the command", silent)
	}
	var versions []string
	for _, e := range srv.Edits() {
		if e.ID == silent[0].ID {
			versions = append(versions, e.Content)
		}
	}
	all := strings.Join(versions, "\n---\n")
	if len(versions) == 0 || !strings.Contains(all, "exit 0") || !strings.HasPrefix(versions[len(versions)-1], "1 command, ") {
		t.Errorf("edits of the status message:\n%s\nwant the exit code, then the summary last", all)
	}
	for _, m := range srv.BotMessages(channel) {
		if m.ID != silent[0].ID && strings.HasPrefix(m.Content, "1 command") {
			t.Errorf("the summary is in another message too: %+v", m)
		}
	}
}

// editedWith reports whether any edit seen by the fake contains text.
func editedWith(srv *discordtest.Server, text string) bool {
	for _, e := range srv.Edits() {
		if strings.Contains(e.Content, text) {
			return true
		}
	}
	return false
}
