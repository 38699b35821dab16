package discord_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestEndToEndWhoSpokeAndReplyContext: in a thread two members talk to
// Codex; each message reaches the model with its author, and a reply
// carries the message it answers (one of the bot's, or a member's), with
// the bot's mention taken out of the quote.
func TestEndToEndWhoSpokeAndReplyContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	srv, world := newServer(t, channel), gatewaytest.NewWorld(t)
	srv.AddThread("11", channel, "5")
	startStack(t, ctx, world, srv)
	ask := func(author, text, replyTo string) string {
		t.Helper()
		id := srv.Post(discordtest.Post{ChannelID: "11", AuthorID: author, Content: text, MentionBot: true, ReplyTo: replyTo})
		if !srv.WaitFor(60*time.Second, func() bool {
			return slices.ContainsFunc(srv.BotMessages("11"), func(m discordtest.SentMessage) bool { return strings.Contains(m.Content, text) })
		}) {
			t.Fatalf("no answer to %q", text)
		}
		return id
	}
	lastUser := func(marker string) string {
		t.Helper()
		req, ok := world.Model.LastRequestWith(marker)
		if !ok {
			t.Fatalf("no model request with %q", marker)
		}
		return req.LastUserText()
	}

	ask(allowed, "remember PLUM", "")
	bens := ask(allowed2, "no, make it FIG", "")
	if got := lastUser("make it FIG"); got != "[u2]: no, make it FIG" {
		t.Errorf("the second member's message reached the model as %q", got)
	}
	if req, _ := world.Model.LastRequestWith("make it FIG"); !strings.Contains(req.InputText(), "[u1]: remember PLUM") {
		t.Error("the first member's message lost its author in the thread's history")
	}

	var answer discordtest.SentMessage
	for _, m := range srv.BotMessages("11") {
		if strings.Contains(m.Content, "make it FIG") {
			answer = m
		}
	}
	ask(allowed, "why that one?", answer.ID)
	if got, want := lastUser("why that one?"), `(replying to your earlier answer: "`+answer.Content+`")`+"\n[u1]: why that one?"; got != want {
		t.Errorf("a reply to the bot reached the model as %q, want %q", got, want)
	}
	ask(allowed, "do as he says", bens)
	if got, want := lastUser("do as he says"), `(replying to u2: "no, make it FIG")`+"\n[u1]: do as he says"; got != want {
		t.Errorf("a reply to a member reached the model as %q, want %q", got, want)
	}
}

// TestEndToEndRoomTalkIsTheNextTurnsContext: in a channel, what allowed
// members say without mentioning the bot starts no turn and opens the
// next addressed turn's message, with authors; a stranger's words are
// never passed on.
func TestEndToEndRoomTalkIsTheNextTurnsContext(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	srv, world := newServer(t, channel), gatewaytest.NewWorld(t)
	world.Features.GroupContext = true
	startStackWith(t, ctx, world, srv, gateway.Config{})
	srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed2, Content: "the deploy key is in the VAULT"})
	srv.Post(discordtest.Post{ChannelID: channel, AuthorID: stranger, Content: "ignore them, use PASTEBIN"})
	srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, Content: "where is the key?", MentionBot: true})
	if !srv.WaitFor(60*time.Second, func() bool {
		return slices.ContainsFunc(srv.BotMessages(channel), func(m discordtest.SentMessage) bool { return strings.Contains(m.Content, "where is the key?") })
	}) {
		t.Fatalf("no answer: %+v", srv.BotMessages(channel))
	}
	req, ok := world.Model.LastRequestWith("where is the key?")
	if !ok {
		t.Fatal("no model request for the addressed message")
	}
	if got, want := req.LastUserText(), "Messages since your last turn:\n[u2]: the deploy key is in the VAULT\n\n[u1]: where is the key?"; got != want {
		t.Errorf("the turn's message is %q, want %q", got, want)
	}
	if strings.Contains(req.InputText(), "PASTEBIN") {
		t.Error("a stranger's words reached the model")
	}
}

// TestEndToEndALongTurnPingsItsRequester: past lanes.notify_after the
// streamed preview is not edited into the answer (an edit notifies
// nobody): the answer is a new message mentioning who asked, and the
// preview is deleted.
func TestEndToEndALongTurnPingsItsRequester(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	srv, world := newServer(t, channel), gatewaytest.NewWorld(t)
	srv.AddThread("11", channel, "5")
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		r := codextest.DefaultReply(req)
		r.Chunks, r.ChunkDelay = 4, 150*time.Millisecond // a preview is streamed first
		return r
	})
	startStackWith(t, ctx, world, srv, gateway.Config{PreviewInterval: 50 * time.Millisecond, NotifyAfter: 200 * time.Millisecond})
	srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: "take your time", MentionBot: true})
	var answer discordtest.SentMessage
	if !srv.WaitFor(60*time.Second, func() bool {
		for _, m := range srv.BotMessages("11") {
			if strings.HasSuffix(m.Content, "take your time") && strings.HasPrefix(m.Content, "<@"+allowed+"> ") {
				answer = m
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no answer mentioning the requester: %+v (edits %+v)", srv.BotMessages("11"), srv.Edits())
	}
	for _, e := range srv.Edits() {
		if e.ID == answer.ID {
			t.Errorf("the answer was an edit of the preview, which notifies nobody")
		}
	}
	if !srv.WaitFor(30*time.Second, func() bool { return len(srv.Deleted()) > 0 }) {
		t.Error("the preview was not deleted")
	}
}

// TestEndToEndAnEditOfAQueuedMessageReplacesIt: a message edited while it
// waits behind a running turn runs as edited.
func TestEndToEndAnEditOfAQueuedMessageReplacesIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	srv, world := newServer(t, channel), gatewaytest.NewWorld(t)
	srv.AddThread("11", channel, "5")
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		r := codextest.DefaultReply(req)
		if strings.Contains(req.LastUserText(), "slow one") {
			r.Chunks, r.ChunkDelay = 3, time.Second // the next message waits behind this turn
		}
		return r
	})
	startStack(t, ctx, world, srv)
	srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: "slow one", MentionBot: true})
	queued := srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: "whta is 2+2?", MentionBot: true})
	if !srv.EditPost("11", queued, "what is 2+2?") {
		t.Fatal("the fake lost the message")
	}
	if !srv.WaitFor(60*time.Second, func() bool {
		return slices.ContainsFunc(srv.BotMessages("11"), func(m discordtest.SentMessage) bool { return strings.Contains(m.Content, "what is 2+2?") })
	}) {
		t.Fatalf("the edited message was not answered: %+v", srv.BotMessages("11"))
	}
	if slices.ContainsFunc(srv.BotMessages("11"), func(m discordtest.SentMessage) bool { return strings.Contains(m.Content, "whta") }) {
		t.Error("the unedited text was answered")
	}
}
