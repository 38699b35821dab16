package discord_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/discord"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
)

var channelAddr = gateway.Address{Platform: "discord", Kind: gateway.LaneChannel, ChatID: channel}

const messagesPath = "channels/" + channel + "/messages"

// The final reply edits its streamed preview into its first part. When the
// preview is gone (deleted by a user, or an id Discord does not know), the
// edit answers 404 Unknown Message, which is permanent: the outbox would
// mark the reply failed and the user would never get it. It is posted as
// new messages instead.
func TestFinalReplyIsPostedWhenItsPreviewCannotBeEdited(t *testing.T) {
	t.Parallel()
	final := strings.Repeat("word ", 900) // 4,500 characters: three parts
	for _, tc := range []struct {
		name    string
		preview func(t *testing.T, srv *discordtest.Server, r *running) string
	}{
		{name: "preview deleted", preview: func(t *testing.T, srv *discordtest.Server, r *running) string {
			id, err := r.a.Send(context.Background(), gateway.Outbound{Address: channelAddr, Kind: gateway.OutPreview,
				Text: final[:100], ReplyTo: "77"})
			if err != nil {
				t.Fatalf("preview: %v", err)
			}
			srv.Delete(channel, id)
			return id
		}},
		{name: "unknown preview id", preview: func(*testing.T, *discordtest.Server, *running) string {
			return "999999999999999999"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, channel)
			r := start(t, baseConfig(t, srv))
			preview := tc.preview(t, srv, r)
			sentBefore := len(srv.Sent(channel))
			last, err := r.a.Send(context.Background(), gateway.Outbound{Address: channelAddr, Kind: gateway.OutReply,
				Text: final, ReplyTo: "77", InReplyTo: "77", EditID: preview})
			if err != nil {
				t.Fatalf("final reply whose preview cannot be edited: %v", err)
			}
			got := srv.Sent(channel)[sentBefore:]
			if len(got) != 3 || got[2].ID != last {
				t.Fatalf("%d new messages, last %s (returned %s); want the three parts", len(got), got[len(got)-1].ID, last)
			}
			if got[0].ReplyTo != "77" || got[1].ReplyTo != "" {
				t.Errorf("reply references %q, %q; want only the first part to reply to 77", got[0].ReplyTo, got[1].ReplyTo)
			}
			var joined strings.Builder
			for _, m := range got {
				joined.WriteString(m.Content)
			}
			if joined.String() != final {
				t.Fatal("the final reply does not read back in order")
			}
		})
	}
}

// A later part of such a reply failing: the retry sends only the rest, and
// does not post the first part a second time.
func TestFinalReplyWithoutPreviewResumesAfterAFailedPart(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	r := start(t, baseConfig(t, srv))
	text := strings.Repeat("a", 1990) + "\n" + strings.Repeat("b", 1990) + "\n" + strings.Repeat("c", 100)
	out := gateway.Outbound{Address: channelAddr, Kind: gateway.OutReply, Text: text, EditID: "999999999999999999"}
	parts := &gatewaytest.Parts{}
	srv.Inject429After("POST", messagesPath, 1, 10*time.Millisecond)
	var ra *gateway.RetryAfterError
	if _, err := r.a.Send(context.Background(), parts.Row(out, 1)); !errors.As(err, &ra) {
		t.Fatalf("err = %v, want RetryAfterError", err)
	}
	if _, err := r.a.Send(context.Background(), parts.Row(out, 1)); err != nil {
		t.Fatalf("retry: %v", err)
	}
	got := srv.Sent(channel)
	if len(got) != 3 || got[0].Content[0] != 'a' || got[1].Content[0] != 'b' || got[2].Content[0] != 'c' {
		t.Fatalf("%d messages; want a, b, c once each", len(got))
	}
}

// An edit that fails for another reason (here: no access) is not turned
// into a new message.
func TestFinalReplyEditRefusedIsNotReposted(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	r := start(t, baseConfig(t, srv))
	preview, err := r.a.Send(context.Background(), gateway.Outbound{Address: channelAddr, Kind: gateway.OutPreview, Text: "draft"})
	if err != nil {
		t.Fatal(err)
	}
	srv.Forbid(channel)
	_, err = r.a.Send(context.Background(), gateway.Outbound{Address: channelAddr, Kind: gateway.OutReply, Text: "final", EditID: preview})
	if !errors.Is(err, gateway.ErrPermanent) {
		t.Fatalf("err = %v, want ErrPermanent", err)
	}
	if n := len(srv.Sent(channel)); n != 1 {
		t.Fatalf("%d messages, want only the preview", n)
	}
}

// The nonce used to depend only on lane, reply-to and text, so Discord's
// enforce_nonce answered an identical second notice (the same "Queued"
// notice in a second burst) with the first message: it was not shown. Two
// outbox rows are two messages, whatever their text; so are two sends
// without a row (previews, direct sends).
func TestIdenticalMessagesSentTwiceAreBothShown(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	r := start(t, baseConfig(t, srv))
	for _, tc := range []struct {
		name          string
		first, second int64 // outbox row ids
	}{
		{name: "two outbox rows", first: 1, second: 2},
		{name: "two sends without a row", first: 0, second: 0},
	} {
		for _, out := range []gateway.Outbound{
			{Address: channelAddr, Kind: gateway.OutNotice, Text: "Queued"},
			{Address: channelAddr, Kind: gateway.OutNotice, Text: "Working on it", ReplyTo: "123", InReplyTo: "123"},
		} {
			before := len(srv.Sent(channel))
			out.ID = tc.first
			first, err := r.a.Send(context.Background(), out)
			if err != nil {
				t.Fatal(err)
			}
			out.ID = tc.second
			second, err := r.a.Send(context.Background(), out)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(srv.Sent(channel)) - before; first == second || n != 2 {
				t.Fatalf("%s: %q twice: ids %s, %s; %d messages; want two", tc.name, out.Text, first, second, n)
			}
		}
	}
}

// A send whose answer was lost (the message was created, the client could
// not know) and is retried: enforce_nonce, keyed on the outbox row and the
// part, returns the message created the first time instead of posting it
// again.
func TestRetryAfterLostAnswerPostsOnce(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		out  gateway.Outbound
	}{
		{name: "reply", out: gateway.Outbound{ID: 5, Address: channelAddr, Kind: gateway.OutReply, Text: "the answer", ReplyTo: "123", InReplyTo: "123"}},
		{name: "notice", out: gateway.Outbound{ID: 5, Address: channelAddr, Kind: gateway.OutNotice, Text: "Queued"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv := newServer(t, channel)
			r := start(t, baseConfig(t, srv))
			srv.LoseAnswer("POST", messagesPath, 1)
			if _, err := r.a.Send(context.Background(), tc.out); err == nil || errors.Is(err, gateway.ErrPermanent) {
				t.Fatalf("err = %v, want a transient error", err)
			}
			created := srv.Sent(channel)
			if len(created) != 1 {
				t.Fatalf("%d messages created by the lost attempt, want 1", len(created))
			}
			id, err := r.a.Send(context.Background(), tc.out)
			if err != nil {
				t.Fatalf("retry: %v", err)
			}
			if got := srv.Sent(channel); len(got) != 1 || id != created[0].ID {
				t.Fatalf("retry returned %s, %d messages; want the one created (%s)", id, len(got), created[0].ID)
			}
			out := tc.out
			out.ID = 6 // another row is another message, even with the same text
			if _, err := r.a.Send(context.Background(), out); err != nil || len(srv.Sent(channel)) != 2 {
				t.Fatalf("err %v, %d messages, want 2", err, len(srv.Sent(channel)))
			}
		})
	}
}

// A reply whose send was cut off by a crash is sent again by the next
// process (the outbox row is still pending): the nonce of a row's part
// does not depend on the process, nor on how the row is labelled.
func TestReplyRetriedByTheNextProcessPostsOnce(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	cfg := baseConfig(t, srv)
	r := start(t, cfg)
	out := gateway.Outbound{ID: 9, Address: channelAddr, Kind: gateway.OutReply, Text: "the answer", ReplyTo: "123", InReplyTo: "123"}
	srv.LoseAnswer("POST", messagesPath, 1)
	if _, err := r.a.Send(context.Background(), out); err == nil {
		t.Fatal("lost answer: no error")
	}
	r.stop()
	next, err := discord.New(cfg) // sending needs no gateway connection
	if err != nil {
		t.Fatal(err)
	}
	out.Kind = gateway.OutNotice
	id, err := next.Send(context.Background(), out)
	if err != nil {
		t.Fatalf("retry by the next process: %v", err)
	}
	if got := srv.Sent(channel); len(got) != 1 || got[0].ID != id {
		t.Fatalf("%d messages (returned %s); want the one created first", len(got), id)
	}
}

// The streamer cancels an in-flight preview send when the turn ends. A
// create already on the wire is let finish, so its id reaches the gateway
// (which edits it into the final reply instead of posting both).
func TestSendOnTheWireFinishesAfterCancel(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	r := start(t, baseConfig(t, srv))
	held := srv.HoldNext("POST", messagesPath)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		id  string
		err error
	}
	res := make(chan result, 1)
	go func() {
		id, err := r.a.Send(ctx, gateway.Outbound{Address: channelAddr, Kind: gateway.OutPreview, Text: "partial"})
		res <- result{id, err}
	}()
	select {
	case <-held.Arrived():
	case <-time.After(waitFor):
		t.Fatal("send never reached Discord")
	}
	cancel()
	// Nothing signals "the client kept the request": give an abandoning
	// client a moment to hang up (well under the 5 s grace).
	select {
	case <-held.ClientGone():
		t.Fatal("the send on the wire was abandoned when its context ended")
	case <-time.After(200 * time.Millisecond):
	}
	held.Release()
	select {
	case got := <-res:
		msgs := srv.BotMessages(channel)
		if got.err != nil || len(msgs) != 1 || got.id != msgs[0].ID {
			t.Fatalf("Send = %q, %v; %d messages; want the created message's id", got.id, got.err, len(msgs))
		}
	case <-time.After(waitFor):
		t.Fatal("Send did not return")
	}
}

// But a send is not started once its context has ended.
func TestSendIsNotStartedAfterCancel(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	r := start(t, baseConfig(t, srv))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.a.Send(ctx, gateway.Outbound{Address: channelAddr, Kind: gateway.OutPreview, Text: "partial"}); err == nil {
		t.Fatal("Send with an ended context succeeded")
	}
	if n := srv.PostAttempts(messagesPath); n != 0 {
		t.Fatalf("%d POSTs, want none", n)
	}
}

// An approval question quotes the agent's command, which may name anyone
// (<@id>, @everyone): it notifies only the requester it pings, while other
// messages keep notifying the users they name.
func TestApprovalQuestionNotifiesOnlyItsRequester(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	r := start(t, baseConfig(t, srv))
	text := "Codex asks to run a command (approval a1):\n```\ncommand: echo <@999> @everyone\n```"
	for _, out := range []gateway.Outbound{
		{Address: channelAddr, Kind: gateway.OutNotice, Text: text, Ping: "42", Approval: &gateway.PendingApproval{ID: "a1"}},
		{Address: channelAddr, Kind: gateway.OutNotice, Text: text, Approval: &gateway.PendingApproval{ID: "a2"}},
		{Address: channelAddr, Kind: gateway.OutReply, Text: "hi <@7>"},
	} {
		if _, err := r.a.Send(context.Background(), out); err != nil {
			t.Fatal(err)
		}
	}
	got := srv.Sent(channel)
	if len(got) != 3 {
		t.Fatalf("%d messages sent, want 3", len(got))
	}
	for i, want := range []struct{ parsed, users string }{{"", "42"}, {"", ""}, {"users", ""}} {
		if p, u := strings.Join(got[i].MentionsParsed, ","), strings.Join(got[i].MentionsUsers, ","); p != want.parsed || u != want.users {
			t.Errorf("message %d allows mentions parse=%q users=%q, want parse=%q users=%q", i, p, u, want.parsed, want.users)
		}
	}
}
