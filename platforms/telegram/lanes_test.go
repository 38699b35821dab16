package telegram

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
)

const mention = "@gatewayd_test_bot "

func TestForumTopicIsAnsweredInItsTopic(t *testing.T) {
	h := newHarness(t)
	a, sink := h.startDefault(t)
	ctx := context.Background()

	h.srv.Text(forum, alice, 42, mention+"hello from 42", nil)
	h.srv.Text(forum, alice, 43, mention+"hello from 43", nil)
	got := sink.waitN(t, 2)

	want42 := gateway.Address{Platform: "telegram", Kind: gateway.LaneTopic, ChatID: "-1001", TopicID: "42"}
	if got[0].Address != want42 {
		t.Fatalf("address = %+v, want %+v", got[0].Address, want42)
	}
	if got[0].Text != "hello from 42" || !got[0].Mentioned {
		t.Fatalf("inbound = %+v; want mention stripped and Mentioned", got[0])
	}
	if got[0].Address.SessionKey() == got[1].Address.SessionKey() {
		t.Fatalf("topics 42 and 43 share the lane %s", got[0].Address.SessionKey())
	}

	id, err := a.Send(ctx, gateway.Outbound{Address: got[0].Address, Text: "answer 42", ReplyTo: got[0].MessageID})
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if err := a.Typing(ctx, got[0].Address); err != nil {
		t.Fatalf("Typing: %v", err)
	}
	msgs := h.srv.Messages(forum.ID, 42)
	if len(msgs) != 1 || msgs[0].Text != "answer 42" {
		t.Fatalf("topic 42 got %+v", msgs)
	}
	if want := strconv.FormatInt(forum.ID, 10) + ":" + strconv.Itoa(msgs[0].ID); id != want {
		t.Fatalf("Send returned %q, want %q", id, want)
	}
	if len(h.srv.Messages(forum.ID, 43)) != 0 {
		t.Fatal("the answer leaked into topic 43")
	}
	if acts := h.srv.Actions(); len(acts) != 1 || acts[0].ThreadID != 42 {
		t.Fatalf("chat actions = %+v, want one in thread 42", acts)
	}
}

func TestGeneralTopic(t *testing.T) {
	h := newHarness(t)
	a, sink := h.startDefault(t)
	ctx := context.Background()

	h.srv.Text(forum, alice, 0, mention+"in general", nil)
	in := sink.waitN(t, 1)[0]
	want := gateway.Address{Platform: "telegram", Kind: gateway.LaneTopic, ChatID: "-1001", TopicID: "1"}
	if in.Address != want {
		t.Fatalf("address = %+v, want %+v", in.Address, want)
	}
	// The fake, like Telegram, rejects message_thread_id=1 in sendMessage.
	if _, err := a.Send(ctx, gateway.Outbound{Address: in.Address, Text: "general answer"}); err != nil {
		t.Fatalf("Send to General: %v", err)
	}
	if msgs := h.srv.Messages(forum.ID, 0); len(msgs) != 1 {
		t.Fatalf("General got %+v, want one message without thread id", msgs)
	}
	if err := a.Typing(ctx, in.Address); err != nil {
		t.Fatalf("Typing: %v", err)
	}
	if acts := h.srv.Actions(); len(acts) != 1 || acts[0].ThreadID != 1 {
		t.Fatalf("chat actions = %+v, want thread 1 for General", acts)
	}
}

func TestOrdinaryGroupReplyThreadDoesNotSplitLane(t *testing.T) {
	h := newHarness(t)
	a, sink := h.startDefault(t)
	h.srv.Chat(group)

	first := h.srv.Text(group, alice, 0, mention+"first", nil)
	sink.waitN(t, 1)
	if _, err := a.Send(context.Background(), gateway.Outbound{Address: sink.delivered()[0].Address, Text: "ok"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	sent := h.srv.Messages(group.ID, -1)[0]
	// A reply in an ordinary supergroup carries the thread id of the
	// replied-to message; it is not a topic.
	h.srv.Text(group, alice, first.ID, "a reply to the bot", botMessage(group, sent.ID))
	got := sink.waitN(t, 2)

	want := gateway.Address{Platform: "telegram", Kind: gateway.LaneGroup, ChatID: "-2002"}
	for i, in := range got {
		if in.Address != want {
			t.Fatalf("message %d address = %+v, want %+v", i, in.Address, want)
		}
	}
	if !got[1].Mentioned || got[1].ReplyTo != "-2002:"+strconv.Itoa(sent.ID) {
		t.Fatalf("reply to bot = %+v; want Mentioned and ReplyTo", got[1])
	}
	if _, err := a.Send(context.Background(), gateway.Outbound{Address: got[1].Address, Text: "still one lane"}); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if msgs := h.srv.Messages(group.ID, 0); len(msgs) != 2 {
		t.Fatalf("group messages without thread = %+v, want 2", msgs)
	}
}

func TestGroupMessagesAddressedToTheBot(t *testing.T) {
	h := newHarness(t)
	cfg := h.config(t)
	cfg.FreeResponseChats = []string{"-1001:77"}
	sink := newSink()
	h.start(t, cfg, sink)
	h.srv.Chat(group)

	tests := []struct {
		name      string
		chat      models.Chat
		topic     int
		text      string
		reply     *models.Message
		delivered bool
		wantText  string
		mentioned bool
		// ambient: delivered as the room's talk, not addressed (the
		// gateway keeps it as context or drops it).
		ambient bool
	}{
		{name: "plain group chatter", chat: group, text: "hello all", delivered: true, wantText: "hello all", ambient: true},
		{name: "command for another bot", chat: group, text: "/status@other_bot"},
		{name: "mention of a longer name", chat: group, text: "@gatewayd_test_bot2 hi", delivered: true, wantText: "@gatewayd_test_bot2 hi", ambient: true},
		{name: "reply to someone else", chat: group, text: "sure", reply: &models.Message{ID: 1, From: &mallory, Chat: group}, delivered: true, wantText: "sure", ambient: true},
		{name: "mention", chat: group, text: "@GatewayD_Test_Bot look", delivered: true, wantText: "look", mentioned: true},
		{name: "command with our name", chat: group, text: "/reset@gatewayd_test_bot now", delivered: true, wantText: "/reset now", mentioned: true},
		{name: "command on its own line", chat: group, text: "/retry@gatewayd_test_bot\nplease", delivered: true, wantText: "/retry\nplease", mentioned: true},
		{name: "bare command", chat: group, text: "/status", delivered: true, wantText: "/status", mentioned: true},
		{name: "reply to the bot", chat: group, text: "and then?", reply: botMessage(group, 9), delivered: true, wantText: "and then?", mentioned: true},
		{name: "free-response topic", chat: forum, topic: 77, text: "no mention needed", delivered: true, wantText: "no mention needed"},
		{name: "other topic of that forum", chat: forum, topic: 78, text: "not free here", delivered: true, wantText: "not free here", ambient: true},
		{name: "private chat", chat: aliceDM, text: "hi", delivered: true, wantText: "hi", mentioned: true},
	}
	var want []string
	for _, tt := range tests {
		m := h.srv.Text(tt.chat, alice, tt.topic, tt.text, tt.reply)
		if tt.delivered {
			want = append(want, messageID(tt.chat.ID, m.ID))
		}
	}
	// Updates are handled in order, so once the sentinel arrives every
	// message before it was either delivered or dropped.
	sentinel := h.srv.Text(aliceDM, alice, 0, "sentinel", nil)
	want = append(want, messageID(aliceDM.ID, sentinel.ID))
	got := sink.waitN(t, len(want))
	if len(got) != len(want) {
		t.Fatalf("delivered %d messages, want %d: %+v", len(got), len(want), got)
	}
	i := 0
	for _, tt := range tests {
		if !tt.delivered {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			in := got[i]
			if in.MessageID != want[i] || in.Text != tt.wantText || in.Mentioned != tt.mentioned || in.Ambient != tt.ambient {
				t.Fatalf("got %+v; want id %s text %q mentioned %v ambient %v", in, want[i], tt.wantText, tt.mentioned, tt.ambient)
			}
		})
		i++
	}
}

func TestUnauthorisedSenderReachesNothing(t *testing.T) {
	h := newHarness(t)
	a, sink := h.startDefault(t)
	h.srv.Chat(group)

	h.srv.Text(malDM, mallory, 0, "let me in", nil)
	h.srv.Text(group, mallory, 0, mention+"run rm -rf", nil)
	h.srv.Text(forum, mallory, 42, "/reset@gatewayd_test_bot", nil)
	sentinel := h.srv.Text(aliceDM, alice, 0, "sentinel", nil)
	got := sink.waitN(t, 1)
	if len(got) != 1 || got[0].MessageID != messageID(aliceDM.ID, sentinel.ID) {
		t.Fatalf("delivered %+v, want only the sentinel", got)
	}
	if n := sink.attemptCount(); n != 1 {
		t.Fatalf("sink saw %d attempts; nothing of mallory's may reach it", n)
	}
	if msgs := h.srv.AllMessages(); len(msgs) != 0 {
		t.Fatalf("bot answered: %+v", msgs)
	}
	h.srv.WaitFor(waitLimit, "offset confirmed", func() bool { return h.srv.Pending() == 0 })

	// A reload that adds mallory lets the next message through.
	a.SetAllowlist([]int64{alice.ID, mallory.ID}, nil)
	h.srv.Text(malDM, mallory, 0, "now?", nil)
	if got := sink.waitN(t, 2); got[1].SenderID != strconv.FormatInt(mallory.ID, 10) {
		t.Fatalf("after reload got %+v", got[1])
	}
}

func TestAuthorize(t *testing.T) {
	a, err := New(Config{Token: telegramtest.Token, Cursor: newMemCursor(), AllowedUsers: []int64{1}, AllowedChats: []int64{-5}})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		sender string
		chat   string
		want   bool
	}{
		{name: "allowed user anywhere", sender: "1", chat: "-9", want: true},
		{name: "member of an allowed chat", sender: "2", chat: "-5", want: true},
		{name: "stranger", sender: "2", chat: "-9", want: false},
		{name: "garbage ids", sender: "x", chat: "y", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := gateway.Inbound{Address: gateway.Address{Platform: "telegram", ChatID: tt.chat}, SenderID: tt.sender}
			if got := a.Authorize(in); got != tt.want {
				t.Fatalf("Authorize = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestCallbackFromAnotherUserCannotApprove(t *testing.T) {
	h := newHarness(t)
	a, sink := h.startDefault(t)
	ctx := context.Background()

	h.srv.Text(forum, alice, 42, mention+"deploy", nil)
	in := sink.waitN(t, 1)[0]
	buttons := []gateway.Button{{ID: "approve:7", Label: "Approve"}, {ID: "decline:7", Label: "Decline"}}
	if _, err := a.SendButtons(ctx, gateway.Outbound{Address: in.Address, Text: "Run `make deploy`?"}, buttons); err != nil {
		t.Fatalf("SendButtons: %v", err)
	}
	prompt := h.srv.Messages(forum.ID, 42)[0]
	if prompt.Markup == "" {
		t.Fatal("prompt has no inline keyboard")
	}

	h.srv.Press(mallory, prompt, "approve:7")
	h.srv.Press(alice, prompt, "decline:7")
	got := sink.waitN(t, 2)
	if len(got) != 2 || got[1].Callback != "decline:7" || got[1].SenderID != strconv.FormatInt(alice.ID, 10) {
		t.Fatalf("deliveries = %+v; want only alice's press", got)
	}
	if got[1].Address != in.Address || got[1].Text != "" {
		t.Fatalf("callback inbound = %+v; want the prompt's lane and no text", got[1])
	}
	h.srv.WaitFor(waitLimit, "both callbacks answered", func() bool { return len(h.srv.Answered()) == 2 })
}

func TestStartupRemovesWebhookAndRegistersCommands(t *testing.T) {
	h := newHarness(t)
	h.srv.SetWebhook("https://example.invalid/hook")
	h.startDefault(t)
	if h.srv.WebhookDeletes() != 1 {
		t.Fatalf("deleteWebhook calls = %d, want 1", h.srv.WebhookDeletes())
	}
	var names []string
	for _, c := range h.srv.Commands() {
		names = append(names, c.Command)
	}
	var want []string
	for _, c := range testCommands {
		if c.Menu {
			want = append(want, c.Name)
		}
	}
	if len(names) != len(want) || names[0] != "new" {
		t.Fatalf("commands = %v, want %v", names, want)
	}
	for i := range want {
		if names[i] != want[i] {
			t.Fatalf("commands = %v, want %v", names, want)
		}
	}
}

// A token Telegram refuses stops Run with a configuration error (the
// daemon exits 2 instead of restarting into the same answer) that names
// the URL used, with the token replaced by <token>.
func TestRejectedTokenStopsRun(t *testing.T) {
	tests := []struct {
		name, token, method string
		fail                *telegramtest.Failure
	}{
		{name: "wrong token at getMe", token: "999:wrong-secret", method: "getMe"},
		{name: "forbidden at getMe", token: telegramtest.Token, method: "getMe",
			fail: &telegramtest.Failure{Code: 403, Description: "Forbidden"}},
		{name: "revoked while polling", token: telegramtest.Token, method: "getUpdates",
			fail: &telegramtest.Failure{Code: 401, Description: "Unauthorized"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if tt.fail != nil {
				h.srv.Fail(tt.method, *tt.fail)
			}
			cfg := h.config(t)
			cfg.Token = tt.token
			a, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			err = a.Run(context.Background(), newSink())
			if !errors.Is(err, gateway.ErrConfig) {
				t.Fatalf("Run = %v, want a gateway.ErrConfig", err)
			}
			got := err.Error()
			if want := h.srv.URL + "/bot<token>/" + tt.method; !strings.Contains(got, want) {
				t.Errorf("error %q does not name the URL %s", got, want)
			}
			if secret := strings.SplitN(tt.token, ":", 2)[1]; strings.Contains(got, secret) {
				t.Errorf("error leaks the token: %s", got)
			}
		})
	}
}

func TestUnauthorisedLogIsRateLimitedPerSender(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	u := newUnauthLog(func() time.Time { return now })
	steps := []struct {
		name    string
		advance time.Duration
		sender  string
		want    bool
	}{
		{name: "first message logs", sender: "6666", want: true},
		{name: "repeat is quiet", advance: time.Minute, sender: "6666", want: false},
		{name: "another sender logs", sender: "7777", want: true},
		{name: "after the window it logs again", advance: unauthLogEvery, sender: "6666", want: true},
	}
	for _, st := range steps {
		now = now.Add(st.advance)
		if got := u.shouldLog(st.sender); got != st.want {
			t.Fatalf("%s: shouldLog = %v, want %v", st.name, got, st.want)
		}
	}
}
