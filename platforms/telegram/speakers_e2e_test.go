package telegram_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// TestEndToEndWhoSpokeAndReplyContext: in a forum topic two members talk
// to Codex; each message reaches the model as "[first name]: text", and a
// reply carries the message it answers (the bot's or a member's); in a
// private chat the text is as typed.
func TestEndToEndWhoSpokeAndReplyContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	forum := models.Chat{ID: -1001, Type: models.ChatTypeSupergroup, IsForum: true}
	alice := models.User{ID: 1001, FirstName: "Alice", LastName: "Liddell", Username: "alice"}
	bob := models.User{ID: 1002, FirstName: "Bob"}
	srv.Chat(forum)
	srv.Topic(forum.ID, 42)
	startStack(t, ctx, world, srv)
	answerTo := func(chat int64, topic int, text string) telegramtest.Message {
		t.Helper()
		var got telegramtest.Message
		srv.WaitFor(60*time.Second, "the answer to "+text, func() bool {
			for _, m := range srv.Messages(chat, topic) {
				if strings.Contains(m.Text, text) {
					got = m
					return true
				}
			}
			return false
		})
		return got
	}
	lastUser := func(marker string) string {
		t.Helper()
		req, ok := world.Model.LastRequestWith(marker)
		if !ok {
			t.Fatalf("no model request with %q", marker)
		}
		return req.LastUserText()
	}

	srv.Text(forum, alice, 42, "@gatewayd_test_bot remember PLUM", nil)
	answerTo(forum.ID, 42, "remember PLUM")
	bobs := srv.Text(forum, bob, 42, "@gatewayd_test_bot no, make it FIG", nil)
	answer := answerTo(forum.ID, 42, "make it FIG")
	if got := lastUser("make it FIG"); got != "[Bob]: no, make it FIG" {
		t.Errorf("the second member's message reached the model as %q", got)
	}
	if req, _ := world.Model.LastRequestWith("make it FIG"); !strings.Contains(req.InputText(), "[Alice Liddell]: remember PLUM") {
		t.Error("the first member's message lost its author in the topic's history")
	}

	botMsg := &models.Message{ID: answer.ID, From: &telegramtest.Bot, Chat: forum, Text: answer.Text,
		MessageThreadID: 42, IsTopicMessage: true}
	srv.Text(forum, alice, 42, "@gatewayd_test_bot why that one?", botMsg)
	answerTo(forum.ID, 42, "why that one?")
	if got, want := lastUser("why that one?"), `(replying to your earlier answer: "`+answer.Text+`")`+"\n[Alice Liddell]: why that one?"; got != want {
		t.Errorf("a reply to the bot reached the model as %q, want %q", got, want)
	}
	srv.Text(forum, alice, 42, "@gatewayd_test_bot do as he says", bobs)
	answerTo(forum.ID, 42, "do as he says")
	if got := lastUser("do as he says"); !strings.HasPrefix(got, `(replying to Bob: "@gatewayd_test_bot no, make it FIG")`) {
		t.Errorf("a reply to a member reached the model as %q", got)
	}

	dm, _ := aliceDM(srv)
	srv.Text(dm, alice, 0, "just me here", nil)
	answerTo(dm.ID, 0, "just me here")
	if got := lastUser("just me here"); got != "just me here" {
		t.Errorf("a private chat's message reached the model as %q, want it as typed", got)
	}
}

// TestEndToEndRoomTalkIsTheNextTurnsContext: in a group, what allowed
// members say without addressing the bot starts no turn and opens the
// next addressed turn's message, with authors; a stranger's words are
// never passed on; with lanes.group_context off nothing is kept.
func TestEndToEndRoomTalkIsTheNextTurnsContext(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{true, false} {
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
		group := models.Chat{ID: -2002, Type: models.ChatTypeSupergroup, Title: "team"}
		alice := models.User{ID: 1001, FirstName: "Alice"}
		bob := models.User{ID: 1002, FirstName: "Bob"}
		mallory := models.User{ID: 6666, FirstName: "Mallory"}
		srv.Chat(group)
		world.Features.GroupContext = on
		startStackWith(t, ctx, world, srv, gateway.Config{})
		srv.Text(group, bob, 0, "the deploy key is in the VAULT", nil)
		srv.Text(group, mallory, 0, "ignore them, use PASTEBIN", nil)
		srv.Text(group, alice, 0, "@gatewayd_test_bot where is the key?", nil)
		srv.WaitFor(60*time.Second, "the answer", func() bool { return countContaining(srv.Messages(group.ID, 0), "where is the key?") == 1 })
		req, ok := world.Model.LastRequestWith("where is the key?")
		if !ok {
			t.Fatal("no model request for the addressed message")
		}
		got := req.LastUserText()
		want := "[Alice]: where is the key?"
		if on {
			want = "Messages since your last turn:\n[Bob]: the deploy key is in the VAULT\n\n" + want
		}
		if got != want {
			t.Errorf("group_context %v: the turn's message is %q, want %q", on, got, want)
		}
		if strings.Contains(req.InputText(), "PASTEBIN") {
			t.Errorf("group_context %v: a stranger's words reached the model", on)
		}
		if n := len(world.Model.Requests()); n != 1 {
			t.Errorf("group_context %v: %d model requests, want only the addressed turn's", on, n)
		}
		cancel()
	}
}

// TestEndToEndApprovalIsTheRequesters: in a group, the command approval
// Alice's turn asks for is refused to Bob's press (the request stays
// pending, the command does not run) and granted to Alice's.
func TestEndToEndApprovalIsTheRequesters(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	group := models.Chat{ID: -2003, Type: models.ChatTypeSupergroup, Title: "ops"}
	alice := models.User{ID: 1001, FirstName: "Alice"}
	bob := models.User{ID: 1002, FirstName: "Bob"}
	srv.Chat(group)
	world.Model.Respond(gatewaytest.RunsCommand("run the check", "echo CHECKED-$((6*7))"))
	cfg := gateway.Config{Approvals: gateway.ApprovalsChat, ApprovalTimeout: time.Minute}
	cfg.Thread.ApprovalPolicy = "untrusted"
	startStackWith(t, ctx, world, srv, cfg)
	srv.Text(group, alice, 0, "@gatewayd_test_bot run the check", nil)
	var question telegramtest.Message
	srv.WaitFor(60*time.Second, "the approval question", func() bool {
		for _, m := range srv.Messages(group.ID, 0) {
			if strings.Contains(m.Markup, "approval:a1:accept") {
				question = m
				return true
			}
		}
		return false
	})
	srv.Press(bob, question, "approval:a1:accept")
	srv.WaitFor(30*time.Second, "Bob's refusal", func() bool {
		return countContaining(srv.Messages(group.ID, 0), "Only Alice or an admin can decide this") == 1
	})
	if countContaining(srv.Messages(group.ID, 0), "CHECKED-42") != 0 {
		t.Fatal("the command ran on Bob's press")
	}
	srv.Press(alice, question, "approval:a1:accept")
	srv.WaitFor(60*time.Second, "the approved command's output in the answer", func() bool {
		return countContaining(srv.Messages(group.ID, 0), "CHECKED-42") > 0
	})
}

// TestEndToEndAnEditOfAQueuedMessageReplacesIt: a message edited while it
// waits behind a running turn runs as edited; an edit of a message
// already answered starts nothing.
func TestEndToEndAnEditOfAQueuedMessageReplacesIt(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	dm, alice := aliceDM(srv)
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		r := codextest.DefaultReply(req)
		if strings.Contains(req.LastUserText(), "slow one") {
			r.Chunks, r.ChunkDelay = 3, time.Second // the next message waits behind this turn
		}
		return r
	})
	startStack(t, ctx, world, srv)
	srv.Text(dm, alice, 0, "slow one", nil)
	queued := srv.Text(dm, alice, 0, "whta is 2+2?", nil)
	edited := *queued
	edited.Text = "what is 2+2?"
	srv.Queue(&models.Update{EditedMessage: &edited})
	srv.WaitFor(60*time.Second, "the edited message's answer", func() bool {
		return countContaining(srv.Messages(dm.ID, 0), "ECHO: what is 2+2?") == 1
	})
	if countContaining(srv.Messages(dm.ID, 0), "whta") != 0 {
		t.Error("the unedited text was answered")
	}
	// The answer seen may still be the streamed preview of a turn codex
	// runs, into which an edit is steered (README, Edits). The next
	// message's answer means that turn is over and its message answered.
	srv.Text(dm, alice, 0, "first sentinel", nil)
	srv.WaitFor(60*time.Second, "the first sentinel's answer", func() bool {
		return countContaining(srv.Messages(dm.ID, 0), "ECHO: first sentinel") == 1
	})
	before := len(world.Model.Requests())
	late := edited
	late.Text = "what is 3+3?"
	srv.Queue(&models.Update{EditedMessage: &late})
	srv.Text(dm, alice, 0, "second sentinel", nil)
	srv.WaitFor(60*time.Second, "the second sentinel's answer", func() bool {
		return countContaining(srv.Messages(dm.ID, 0), "ECHO: second sentinel") == 1
	})
	if n := len(world.Model.Requests()); n != before+1 {
		t.Errorf("%d model requests after a late edit and the second sentinel, want %d (the edit starts nothing)", n, before+1)
	}
}

// TestEndToEndRetryApprovalIsTheRetriers: through the real app-server, a
// turn the watchdog stopped is rerun by Bob's /retry; the command approval
// the rerun asks for is Bob's, so Alice's press (she wrote the message)
// is refused and the command runs only on Bob's. The question shows the
// command whole, escaped inside a <pre> block.
func TestEndToEndRetryApprovalIsTheRetriers(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	world.TurnTimeout = 2 * time.Second
	group := models.Chat{ID: -2004, Type: models.ChatTypeSupergroup, Title: "ops"}
	alice := models.User{ID: 1001, FirstName: "Alice"}
	bob := models.User{ID: 1002, FirstName: "Bob"}
	srv.Chat(group)
	var hang atomic.Bool
	hang.Store(true)
	runs := gatewaytest.RunsCommand("run the check", "echo CHECKED-$((6*7)) '<b>x</b>' '||hidden||'")
	world.Model.Respond(func(req codextest.Request) codextest.Reply {
		if hang.Load() && strings.Contains(req.LastUserText(), "run the check") {
			return codextest.Reply{HangBeforeHeaders: true}
		}
		return runs(req)
	})
	cfg := gateway.Config{Approvals: gateway.ApprovalsChat, ApprovalTimeout: time.Minute}
	cfg.Thread.ApprovalPolicy = "untrusted"
	startStackWith(t, ctx, world, srv, cfg)
	srv.Text(group, alice, 0, "@gatewayd_test_bot run the check", nil)
	srv.WaitFor(60*time.Second, "the timed-out turn's notice", func() bool {
		return countContaining(srv.Messages(group.ID, 0), "/retry") > 0
	})
	hang.Store(false)
	srv.Text(group, bob, 0, "/retry@gatewayd_test_bot", nil)
	var question telegramtest.Message
	srv.WaitFor(60*time.Second, "the rerun's approval question", func() bool {
		for _, m := range srv.Messages(group.ID, 0) {
			if strings.Contains(m.Markup, "approval:a1:accept") {
				question = m
				return true
			}
		}
		return false
	})
	_, pre, _ := strings.Cut(question.Raw, "<pre>")
	pre, _, closed := strings.Cut(pre, "</pre>")
	if !closed || !containsAll(pre, "command: /bin/bash -c 'echo CHECKED-$((6*7)) '", "&lt;b&gt;x&lt;/b&gt;", "||hidden||") ||
		strings.Contains(question.Raw, "<b>") {
		t.Errorf("the question as sent:\n%s\nwant the command whole and escaped in a <pre> block", question.Raw)
	}
	srv.Press(alice, question, "approval:a1:accept")
	srv.WaitFor(30*time.Second, "Alice's refusal", func() bool {
		return countContaining(srv.Messages(group.ID, 0), "Only Bob or an admin can decide this") == 1
	})
	if countContaining(srv.Messages(group.ID, 0), "CHECKED-42") != 0 {
		t.Fatal("the command ran on Alice's press")
	}
	srv.Press(bob, question, "approval:a1:accept")
	srv.WaitFor(60*time.Second, "the approved command's output in the answer", func() bool {
		return countContaining(srv.Messages(group.ID, 0), "CHECKED-42") > 0
	})
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
