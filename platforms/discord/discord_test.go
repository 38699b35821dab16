package discord_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/bwmarrin/discordgo"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/discord"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
)

func TestThreadLanesAreIsolated(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	srv.AddThread("11", channel, "5")
	srv.AddThread("12", channel, "5")
	r := start(t, baseConfig(t, srv))

	if _, _, intents := srv.Sessions(); intents != int(discordgo.IntentsGuilds|discordgo.IntentsGuildMessages|
		discordgo.IntentsMessageContent|discordgo.IntentsDirectMessages) {
		t.Errorf("intents = %d", intents)
	}
	srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: "task A", MentionBot: true})
	a := r.sink.next(t)
	srv.Post(discordtest.Post{ChannelID: "12", AuthorID: allowed, Content: "task B", MentionBot: true})
	b := r.sink.next(t)
	// No mention: answered because the bot was mentioned in this thread.
	srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: "more on A"})
	a2 := r.sink.next(t)

	wantA := gateway.Address{Platform: "discord", Kind: gateway.LaneThread, ChatID: channel, TopicID: "11"}
	if a.Address != wantA || a2.Address != wantA {
		t.Errorf("thread 11 addresses = %+v, %+v; want %+v", a.Address, a2.Address, wantA)
	}
	if b.Address.TopicID != "12" || b.Address.SessionKey() == a.Address.SessionKey() {
		t.Errorf("thread 12 address %+v shares or misses its lane", b.Address)
	}
	if a.Text != "task A" || !a.Mentioned || a2.Mentioned {
		t.Errorf("texts/mentions: %q %v, %q %v", a.Text, a.Mentioned, a2.Text, a2.Mentioned)
	}
	for _, in := range []gateway.Inbound{a, b} {
		if _, err := r.a.Send(context.Background(), gateway.Outbound{Address: in.Address, Text: "re " + in.Text, ReplyTo: in.MessageID}); err != nil {
			t.Fatalf("Send: %v", err)
		}
	}
	if got := srv.Sent("11"); len(got) != 1 || got[0].Content != "re task A" || got[0].ReplyTo != a.MessageID {
		t.Errorf("thread 11 got %+v", got)
	}
	if got := srv.Sent("12"); len(got) != 1 || got[0].Content != "re task B" {
		t.Errorf("thread 12 got %+v", got)
	}
	// The bot's own messages (dispatched back by the fake) reach nothing.
	sentinel(t, srv, r)
}

func TestDMAndUnaddressedChannelMessages(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	srv.AddDM("20", allowed)
	r := start(t, baseConfig(t, srv))

	// Chatter not for the bot comes as the room's talk (ambient), a
	// stranger's not at all, another bot's mention neither.
	chatter := srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, Content: "chatter, not for the bot"})
	srv.Post(discordtest.Post{ChannelID: channel, AuthorID: stranger, Content: "a stranger's chatter"})
	srv.Post(discordtest.Post{ChannelID: channel, AuthorID: "7", Content: "bot talk", MentionBot: true, Bot: true})
	id := srv.Post(discordtest.Post{ChannelID: "20", AuthorID: allowed, Content: "hello"})
	if in := r.sink.next(t); in.MessageID != chatter || !in.Ambient || in.Mentioned || in.Text != "chatter, not for the bot" {
		t.Fatalf("channel chatter delivered as %+v, want it ambient", in)
	}
	in := r.sink.next(t)
	want := gateway.Address{Platform: "discord", Kind: gateway.LaneDM, ChatID: "20"}
	if in.MessageID != id || in.Address != want || in.Text != "hello" {
		t.Fatalf("got %+v, want DM message %s at %+v", in, id, want)
	}

	// A reply to the bot addresses it without a mention.
	chanLane := gateway.Address{Platform: "discord", Kind: gateway.LaneChannel, ChatID: channel}
	botMsg, err := r.a.Send(context.Background(), gateway.Outbound{Address: chanLane, Text: "earlier answer"})
	if err != nil {
		t.Fatal(err)
	}
	id = srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, Content: "about that", ReplyTo: botMsg})
	if in := r.sink.next(t); in.MessageID != id || in.Address != chanLane || in.ReplyTo != botMsg || !in.Mentioned {
		t.Fatalf("reply to the bot: %+v", in)
	}
}

func TestFreeResponseChannelAndPerUserLanes(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	cfg := baseConfig(t, srv)
	cfg.FreeResponseChannels = []string{channel}
	cfg.PerUserChannels = true
	r := start(t, cfg)
	srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, Content: "no mention needed"})
	srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed2, Content: "me too"})
	a, b := r.sink.next(t), r.sink.next(t)
	if a.Address.UserID != allowed || b.Address.UserID != allowed2 || a.Address.SessionKey() == b.Address.SessionKey() {
		t.Fatalf("per-user lanes: %+v, %+v", a.Address, b.Address)
	}
	if a.Mentioned {
		t.Error("free-response message marked as mentioning the bot")
	}
}

func TestAutoThreadKeepsOneLane(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	cfg := baseConfig(t, srv)
	cfg.AutoThread = true
	r := start(t, cfg)

	first := srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, Content: "fix the build", MentionBot: true})
	in := r.sink.next(t)
	th, ok := srv.Channel(first)
	if !ok || th.ParentID != channel || th.OwnerID != discordtest.BotID {
		t.Fatalf("no thread started from %s: %+v", first, th)
	}
	want := gateway.Address{Platform: "discord", Kind: gateway.LaneThread, ChatID: channel, TopicID: th.ID}
	if in.Address != want || in.Text != "fix the build" {
		t.Fatalf("first message at %+v %q, want %+v", in.Address, in.Text, want)
	}
	srv.Post(discordtest.Post{ChannelID: th.ID, AuthorID: allowed, Content: "and the tests"})
	follow := r.sink.next(t)
	if follow.Address.SessionKey() != in.Address.SessionKey() {
		t.Fatalf("follow-up lane %s != %s", follow.Address.SessionKey(), in.Address.SessionKey())
	}
	if _, err := r.a.Send(context.Background(), gateway.Outbound{Address: in.Address, Text: "on it", ReplyTo: in.MessageID}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if got := srv.Sent(th.ID); len(got) != 1 || got[0].ReplyTo != "" {
		t.Fatalf("thread got %+v (the starter message cannot be replied to from the thread)", got)
	}
}

func TestLongReplyIsSplitInOrder(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	r := start(t, baseConfig(t, srv))
	addr := gateway.Address{Platform: "discord", Kind: gateway.LaneChannel, ChatID: channel}

	var b strings.Builder
	for i := 0; b.Len() < 6000; i++ {
		b.WriteString("line ")
		b.WriteString(strings.Repeat("é", i%7))
		b.WriteString(" 🙂 words\n")
	}
	text := b.String()
	id, err := r.a.Send(context.Background(), gateway.Outbound{Address: addr, Text: text})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	got := srv.Sent(channel)
	if len(got) < 3 || got[len(got)-1].ID != id {
		t.Fatalf("%d parts, last id %s, returned %s", len(got), got[len(got)-1].ID, id)
	}
	var joined strings.Builder
	for _, m := range got {
		if n := utf8.RuneCountInString(m.Content); n > 2000 || !utf8.ValidString(m.Content) {
			t.Errorf("part of %d runes (valid UTF-8: %v)", n, utf8.ValidString(m.Content))
		}
		joined.WriteString(m.Content)
	}
	if joined.String() != text {
		t.Fatal("parts do not rejoin to the original text in order")
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	r := start(t, baseConfig(t, srv))
	addr := gateway.Address{Platform: "discord", Kind: gateway.LaneChannel, ChatID: channel}
	path := "channels/" + channel + "/messages"

	t.Run("single message: surfaced, not retried by discordgo", func(t *testing.T) {
		srv.Inject429("POST", path, 1500*time.Millisecond, 1)
		before := srv.PostAttempts(path)
		_, err := r.a.Send(context.Background(), gateway.Outbound{Address: addr, Text: "hi"})
		var ra *gateway.RetryAfterError
		if !errors.As(err, &ra) || ra.After != 1500*time.Millisecond {
			t.Fatalf("err = %v, want RetryAfterError after 1.5s", err)
		}
		if n := srv.PostAttempts(path) - before; n != 1 {
			t.Fatalf("%d POST attempts, want 1 (no hidden retry)", n)
		}
		if _, err := r.a.Send(context.Background(), gateway.Outbound{Address: addr, Text: "hi"}); err != nil {
			t.Fatalf("retry: %v", err)
		}
		if got := srv.Sent(channel); len(got) != 1 || got[0].Content != "hi" {
			t.Fatalf("sent %+v, want exactly one", got)
		}
	})
	t.Run("second part of a split: the retry sends only the rest", func(t *testing.T) {
		text := strings.Repeat("a", 1990) + "\n" + strings.Repeat("b", 1990) + "\n" + strings.Repeat("c", 100)
		sentBefore := len(srv.Sent(channel))
		parts := &gatewaytest.Parts{}
		out := gateway.Outbound{Address: addr, Text: text}
		srv.Inject429After("POST", path, 1, 10*time.Millisecond)
		_, err := r.a.Send(context.Background(), parts.Row(out, 1))
		var ra *gateway.RetryAfterError
		if !errors.As(err, &ra) {
			t.Fatalf("err = %v, want RetryAfterError", err)
		}
		if _, err := r.a.Send(context.Background(), parts.Row(out, 1)); err != nil {
			t.Fatalf("retry: %v", err)
		}
		got := srv.Sent(channel)[sentBefore:]
		if len(got) != 3 || got[0].Content[0] != 'a' || got[1].Content[0] != 'b' || got[2].Content[0] != 'c' {
			t.Fatalf("parts after retry: %d (want a, b, c once each)", len(got))
		}
	})
}

func TestPermanentFailures(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel, "30")
	srv.Forbid("30")
	r := start(t, baseConfig(t, srv))
	for _, tc := range []struct{ name, chat string }{
		{name: "unknown channel (404)", chat: "404"},
		{name: "missing access (403)", chat: "30"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := gateway.Address{Platform: "discord", Kind: gateway.LaneChannel, ChatID: tc.chat}
			_, err := r.a.Send(context.Background(), gateway.Outbound{Address: addr, Text: "x"})
			if !errors.Is(err, gateway.ErrPermanent) {
				t.Fatalf("err = %v, want ErrPermanent", err)
			}
			if strings.Contains(err.Error(), discordtest.Token) {
				t.Fatal("token in error text")
			}
		})
	}
}

func TestEditAndTyping(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	r := start(t, baseConfig(t, srv))
	addr := gateway.Address{Platform: "discord", Kind: gateway.LaneChannel, ChatID: channel}
	ctx := context.Background()
	id, err := r.a.Send(ctx, gateway.Outbound{Address: addr, Text: "draft"})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if err := r.a.Edit(ctx, addr, id, strings.Repeat("x", 2500)); err != nil {
		t.Fatalf("Edit: %v", err)
	}
	if err := r.a.Typing(ctx, addr); err != nil {
		t.Fatalf("Typing: %v", err)
	}
	edits := srv.Edits()
	if len(edits) != 1 || edits[0].ID != id || utf8.RuneCountInString(edits[0].Content) > 2000 {
		t.Fatalf("edits %d (want one, within the limit)", len(edits))
	}
	if n := srv.Typing(channel); n != 1 {
		t.Fatalf("typing = %d", n)
	}
}

func TestStreamedPreviewThenFinalReply(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	r := start(t, baseConfig(t, srv))
	addr := gateway.Address{Platform: "discord", Kind: gateway.LaneChannel, ChatID: channel}
	ctx := context.Background()
	final := strings.Repeat("word ", 900) // 4,500 characters

	preview, err := r.a.Send(ctx, gateway.Outbound{Address: addr, Kind: gateway.OutPreview, Text: final[:2500]})
	if err != nil {
		t.Fatalf("preview: %v", err)
	}
	if got := srv.Sent(channel); len(got) != 1 || !strings.HasSuffix(got[0].Content, "…") {
		t.Fatalf("preview sent as %d messages, want one cut with …", len(got))
	}
	last, err := r.a.Send(ctx, gateway.Outbound{Address: addr, Kind: gateway.OutReply, Text: final, EditID: preview})
	if err != nil {
		t.Fatalf("final: %v", err)
	}
	msgs := srv.BotMessages(channel)
	if len(msgs) != 3 || msgs[0].ID != preview || msgs[2].ID != last {
		t.Fatalf("%d bot messages (want the preview edited plus two more)", len(msgs))
	}
	var joined strings.Builder
	for _, m := range msgs {
		joined.WriteString(m.Content)
	}
	if joined.String() != final {
		t.Fatal("the final reply does not read back in order")
	}
}

func TestDroppedSocketResumesWithoutDoubleDelivery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		interrupt func(*discordtest.Server)
	}{
		{name: "socket dropped", interrupt: (*discordtest.Server).DropConnection},
		{name: "op 7 reconnect", interrupt: (*discordtest.Server).Reconnect},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newServer(t, channel)
			srv.AddDM("20", allowed)
			r := start(t, baseConfig(t, srv))
			first := srv.Post(discordtest.Post{ChannelID: "20", AuthorID: allowed, Content: "one"})
			r.sink.next(t)
			tc.interrupt(srv)
			second := srv.Post(discordtest.Post{ChannelID: "20", AuthorID: allowed, Content: "two"})
			if !srv.WaitSessions(1, 1, waitFor) {
				t.Fatal("client did not resume")
			}
			if in := r.sink.next(t); in.MessageID != second {
				t.Fatalf("after resume got %s, want %s", in.MessageID, second)
			}
			sentinel(t, srv, r)
			var ids []string
			for _, in := range r.sink.deliveries() {
				ids = append(ids, in.MessageID)
			}
			if len(ids) != 3 || ids[0] != first || ids[1] != second {
				t.Fatalf("deliveries %v, want %s, %s, sentinel once each", ids, first, second)
			}
			if i, _, _ := srv.Sessions(); i != 1 {
				t.Fatalf("%d IDENTIFYs, want 1 (resume, not a new session)", i)
			}
		})
	}
}

func TestInvalidSessionBackfillsTheGap(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	srv.AddDM("20", allowed)
	r := start(t, baseConfig(t, srv))
	srv.Post(discordtest.Post{ChannelID: "20", AuthorID: allowed, Content: "one"})
	r.sink.next(t)
	srv.InvalidateSession()
	// Posted while the client has no session: only history has it.
	gap := srv.Post(discordtest.Post{ChannelID: "20", AuthorID: allowed, Content: "gap"})
	if !srv.WaitSessions(2, 0, waitFor) {
		t.Fatal("client did not identify again")
	}
	if in := r.sink.next(t); in.MessageID != gap || in.Text != "gap" {
		t.Fatalf("got %s %q, want the gap message %s", in.MessageID, in.Text, gap)
	}
}

func TestDowntimeMessagesDeliveredOnceAfterRestart(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	srv.AddThread("11", channel, "5")
	cfg := baseConfig(t, srv)

	first := start(t, cfg)
	srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: "start", MentionBot: true})
	first.sink.next(t)
	first.stop()

	m1 := srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: "while down 1"})
	srv.Post(discordtest.Post{ChannelID: "11", AuthorID: stranger, Content: "stranger while down"})
	m2 := srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: "while down 2"})

	second := start(t, cfg)
	// Ready is closed after backfill: both were delivered before it.
	got := second.sink.deliveries()
	if len(got) != 2 || got[0].MessageID != m1 || got[1].MessageID != m2 {
		t.Fatalf("after restart delivered %+v, want %s then %s before ready", got, m1, m2)
	}
	second.sink.next(t)
	second.sink.next(t)
	if got[0].Address.TopicID != "11" {
		t.Fatalf("backfilled into %+v", got[0].Address)
	}
	sentinel(t, srv, second)
	second.stop()

	// A cursor that lags (e.g. a crash before it was saved) delivers again;
	// the ids are the same snowflakes, so the gateway's inbox drops them.
	cfg.Cursor.(*memCursor).rewind("11", got[0].MessageID)
	third := start(t, cfg)
	if again := third.sink.next(t); again.MessageID != m2 {
		t.Fatalf("redelivery %+v, want only %s again (same id)", again, m2)
	}
	sentinel(t, srv, third)
}

func TestUnauthorisedUserReachesNothing(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	srv.AddDM("21", stranger)
	srv.SetRoles("7", "role-ok")
	cfg := baseConfig(t, srv)
	cfg.AllowedRoles = []string{"role-ok"}
	r := start(t, cfg)

	srv.Post(discordtest.Post{ChannelID: channel, AuthorID: stranger, Content: "let me in", MentionBot: true})
	srv.Post(discordtest.Post{ChannelID: "21", AuthorID: stranger, Content: "dm"})
	srv.SlashCommand(channel, "new", stranger)
	id := srv.Post(discordtest.Post{ChannelID: channel, AuthorID: "7", Content: "by role", MentionBot: true})
	in := r.sink.next(t)
	if in.MessageID != id || len(in.SenderRoles) != 1 {
		t.Fatalf("first delivery %+v, want the role member's %s", in, id)
	}
	if len(srv.Sent(channel)) != 0 || len(srv.Sent("21")) != 0 {
		t.Fatal("the stranger got an answer")
	}
	resp := srv.Responses()
	if len(resp) != 1 || !resp[0].Ephemeral {
		t.Fatalf("slash command by stranger: responses %+v, want one ephemeral refusal", resp)
	}

	r.a.SetAllowlist([]string{stranger}, nil)
	id = srv.Post(discordtest.Post{ChannelID: "21", AuthorID: stranger, Content: "now allowed"})
	if in := r.sink.next(t); in.MessageID != id {
		t.Fatalf("after reload got %+v", in)
	}
}

func TestAuthorize(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	cfg := baseConfig(t, srv)
	cfg.AllowedRoles = []string{"r1"}
	cfg.AllowedChannels = []string{channel}
	a, err := discord.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	thread := gateway.Address{Platform: "discord", Kind: gateway.LaneThread, ChatID: channel, TopicID: "11"}
	for _, tc := range []struct {
		name string
		in   gateway.Inbound
		want bool
	}{
		{name: "allowed user", in: gateway.Inbound{Address: thread, SenderID: allowed}, want: true},
		{name: "allowed role", in: gateway.Inbound{Address: thread, SenderID: "8", SenderRoles: []string{"x", "r1"}}, want: true},
		{name: "stranger", in: gateway.Inbound{Address: thread, SenderID: stranger}},
		{name: "other channel", in: gateway.Inbound{Address: gateway.Address{Platform: "discord", Kind: gateway.LaneChannel, ChatID: "77"}, SenderID: allowed}},
		{name: "other platform", in: gateway.Inbound{Address: gateway.Address{Platform: "telegram", Kind: gateway.LaneDM, ChatID: "1"}, SenderID: allowed}},
		{name: "dm outside channel list", in: gateway.Inbound{Address: gateway.Address{Platform: "discord", Kind: gateway.LaneDM, ChatID: "55"}, SenderID: allowed}, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := a.Authorize(tc.in); got != tc.want {
				t.Fatalf("Authorize = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestButtonPressFromAnotherUserIsRefused(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	cfg := baseConfig(t, srv)
	cfg.PerUserChannels = true
	r := start(t, cfg)
	lane := gateway.Address{Platform: "discord", Kind: gateway.LaneChannel, ChatID: channel, UserID: allowed}
	msgID, err := r.a.SendButtons(context.Background(), gateway.Outbound{Address: lane, Text: "Run `make`?"},
		[]gateway.Button{{ID: "approve:1", Label: "Approve"}, {ID: "deny:1", Label: "Deny"}})
	if err != nil {
		t.Fatalf("SendButtons: %v", err)
	}
	if got := srv.Sent(channel); len(got) != 1 || len(got[0].ButtonIDs) != 2 {
		t.Fatalf("sent %+v", got)
	}
	srv.PressButton(channel, msgID, "approve:1", stranger) // not allowed at all
	srv.PressButton(channel, msgID, "approve:1", allowed2) // allowed, but not this lane's user
	press := srv.PressButton(channel, msgID, "deny:1", allowed)
	in := r.sink.next(t)
	if in.MessageID != press || in.Callback != "deny:1" || in.Text != "" || in.Address != lane {
		t.Fatalf("delivery %+v, want the lane user's press", in)
	}
	sentinel(t, srv, r) // the press's acknowledgement follows its delivery
	resp := srv.Responses()
	if len(resp) != 3 || !resp[0].Ephemeral || !resp[1].Ephemeral || resp[2].Type != int(discordgo.InteractionResponseDeferredMessageUpdate) {
		t.Fatalf("responses %+v, want two ephemeral refusals then an ack", resp)
	}
}

func TestSlashCommandNew(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	srv.AddThread("11", channel, "5")
	r := start(t, baseConfig(t, srv))
	if got, want := strings.Join(srv.Commands(), ","), strings.Join(menuNames(), ","); got != want || !strings.HasPrefix(got, "new,reset,") {
		t.Fatalf("registered commands %q, want %q", got, want)
	}
	id := srv.SlashCommand("11", "new", allowed)
	in := r.sink.next(t)
	want := gateway.Address{Platform: "discord", Kind: gateway.LaneThread, ChatID: channel, TopicID: "11"}
	if in.Text != "/new" || in.MessageID != id || in.Address != want || !in.Mentioned {
		t.Fatalf("delivery %+v", in)
	}
	sentinel(t, srv, r)
	if resp := srv.Responses(); len(resp) != 1 || resp[0].InteractionID != id || resp[0].Ephemeral {
		t.Fatalf("responses %+v", resp)
	}
	// A command with arguments takes them in its one option: the
	// gateway sees the typed command.
	if opts := srv.CommandOptions("fork"); len(opts) != 1 || opts[0] != "arguments" {
		t.Fatalf("/fork registered with options %q, want [arguments]", opts)
	}
	if opts := srv.CommandOptions("new"); len(opts) != 0 {
		t.Fatalf("/new registered with options %q, want none", opts)
	}
	srv.SlashCommandWith("11", "fork", allowed, map[string]string{"arguments": "  kiwi experiments "})
	if in := r.sink.next(t); in.Text != "/fork kiwi experiments" {
		t.Fatalf("/fork with arguments delivered %q", in.Text)
	}
	sentinel(t, srv, r)
	// The text command works too.
	srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: "/new", MentionBot: true})
	if in := r.sink.next(t); in.Text != "/new" || in.Address != want {
		t.Fatalf("text command %+v", in)
	}
}

func TestRunFailsOnABadToken(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	cfg := baseConfig(t, srv)
	cfg.Token = "wrong"
	a, err := discord.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitFor)
	defer cancel()
	err = a.Run(ctx, newSink())
	// A configuration error (the daemon exits 2, no restart loop) naming
	// the URL actually used: the fake's, not discord.com.
	if !errors.Is(err, gateway.ErrConfig) || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("Run = %v, want a configuration error without the token", err)
	}
	if want := srv.URL() + "/api/v9/gateway"; !strings.Contains(err.Error(), want+":") {
		t.Errorf("error %q does not name the URL %s", err, want)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  discord.Config
	}{
		{name: "no token", cfg: discord.Config{}},
		{name: "relative api url", cfg: discord.Config{Token: "x", APIURL: "127.0.0.1:1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := discord.New(tc.cfg); !errors.Is(err, discord.ErrConfig) {
				t.Fatalf("err = %v, want ErrConfig", err)
			}
		})
	}
}

// Delete removes the bot's message; a message already gone counts as
// deleted.
func TestDelete(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	r := start(t, baseConfig(t, srv))
	addr := gateway.Address{Platform: "discord", Kind: gateway.LaneChannel, ChatID: channel}
	ctx := context.Background()
	id, err := r.a.Send(ctx, gateway.Outbound{Address: addr, Kind: gateway.OutPreview, Text: "draft"})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	for i := range 2 {
		if err := r.a.Delete(ctx, addr, id); err != nil {
			t.Fatalf("Delete #%d: %v", i+1, err)
		}
	}
	if d := srv.Deleted(); len(d) != 1 || d[0].ID != id {
		t.Errorf("deleted = %+v, want message %s once", d, id)
	}
	for _, m := range srv.BotMessages(channel) {
		if m.ID == id {
			t.Errorf("message %s still in the channel", id)
		}
	}
}

// blockingSink takes no delivery: Deliver waits until its context ends, as
// a node dying in the middle of it would never return.
type blockingSink struct{ arrived chan string }

func (s blockingSink) Deliver(ctx context.Context, in gateway.Inbound) (bool, error) {
	s.arrived <- in.MessageID
	<-ctx.Done()
	return false, ctx.Err()
}

// The first message of a channel the bot never talked in, and the node
// stops while delivering it: the channel is in the index already, with
// its cursor before the message, so the next node's READY fetches it. A
// lane indexed only once its first delivery returned is unknown to every
// other node, and the message is lost.
func TestNewLaneSurvivesANodeStoppedMidDelivery(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	cfg := baseConfig(t, srv)
	arrived := make(chan string, 1)
	first := startWithSink(t, cfg, func(*recSink) gateway.Sink { return blockingSink{arrived: arrived} })
	id := srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, Content: "first words", MentionBot: true})
	select {
	case got := <-arrived:
		if got != id {
			t.Fatalf("delivery of %s, want %s", got, id)
		}
	case <-time.After(waitFor):
		t.Fatal("the message never reached the sink")
	}
	first.stop()

	second := start(t, cfg) // ready after its backfill
	if got := second.sink.deliveries(); len(got) != 1 || got[0].MessageID != id {
		t.Fatalf("the next node delivered %+v before ready, want the message %s", got, id)
	}
}

// testCommands stand for the gateway's commands: menu ones with and
// without arguments, and one typed only.
var testCommands = []gateway.CommandInfo{
	{Name: "new", Description: "Start a fresh Codex thread", Menu: true},
	{Name: "reset", Description: "Start a fresh Codex thread", Menu: true},
	{Name: "fork", Args: "[title]", Description: "Fork this conversation", Menu: true},
	{Name: "btw", Args: "QUESTION", Description: "Ask a side question"},
	{Name: "help", Description: "List commands", Menu: true},
}

// menuNames is the menu commands of the adapter's Config in order: what
// it must register, whatever commands the gateway has.
func menuNames() []string {
	var names []string
	for _, c := range testCommands {
		if c.Menu {
			names = append(names, c.Name)
		}
	}
	return names
}
