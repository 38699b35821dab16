package slack_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/slack"
	"github.com/gatewayd/gatewayd/platforms/slack/slacktest"
	"github.com/gatewayd/gatewayd/store"
)

// startStack runs gatewayd (real store and codex with the fake model)
// with a Slack adapter talking to the fake Slack.
func startStack(t *testing.T, ctx context.Context, w *gatewaytest.World, fake *slacktest.Server, cfg gateway.Config) *gatewaytest.Stack {
	t.Helper()
	return w.Start(t, ctx, cfg, func(st *store.Store) []gateway.Platform {
		return []gateway.Platform{newAdapter(t, fake, st)}
	})
}

// e2eCommands are the gateway commands the tests spell with "!" (the
// daemon passes the gateway's whole list).
var e2eCommands = []gateway.CommandInfo{{Name: "new"}, {Name: "fork"}, {Name: "plan"}, {Name: "status"}}

func newAdapter(t testing.TB, fake *slacktest.Server, st *store.Store) *slack.Adapter {
	a, err := slack.New(slack.Config{BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: fake.APIURL(),
		AllowedUsers: []string{allowed, allowed2}, Cursor: st, Logger: zaptest.NewLogger(t), PingInterval: 2 * time.Second,
		Commands: e2eCommands})
	if err != nil {
		t.Fatalf("slack.New: %v", err)
	}
	return a
}

// botReplies counts the bot's messages in channel whose shown text
// (markdown blocks, edits applied) contains want.
func botReplies(fake *slacktest.Server, ch, want string) int {
	n := 0
	for _, m := range fake.Sent(ch) {
		if strings.Contains(slacktest.Markdown(m), want) {
			n++
		}
	}
	return n
}

// threadHas reports whether the bot said want in the thread rooted at root.
func threadHas(fake *slacktest.Server, root, want string) func() bool {
	return func() bool {
		for _, m := range fake.Thread(channel, root) {
			if m.BotID != "" && (strings.Contains(slacktest.Markdown(m), want) || strings.Contains(m.Text, want)) {
				return true
			}
		}
		return false
	}
}

func waitReply(t *testing.T, fake *slacktest.Server, ch, want string) {
	t.Helper()
	if !fake.WaitFor(60*time.Second, func() bool { return botReplies(fake, ch, want) > 0 }) {
		var shown []string
		for _, m := range fake.Sent(ch) {
			shown = append(shown, slacktest.Markdown(m))
		}
		t.Fatalf("no reply containing %q in %s: %q", want, ch, shown)
	}
}

// TestEndToEndThreadLanesKeepContextAcrossRestart: two Slack threads talk
// to the real codex; the daemon restarts, a message is posted while it is
// down and Slack gives up on it (backfill reads it back), and one event's
// ack is lost (Slack redelivers it). Each thread's later turn carries its
// own first message and not the other's; nothing is answered twice.
func TestEndToEndThreadLanesKeepContextAcrossRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
	defer cancel()
	fake, world := newFake(t), gatewaytest.NewWorld(t)
	d := startStack(t, ctx, world, fake, gateway.Config{})
	a := fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "remember APPLE", MentionBot: true})
	b := fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "remember PEAR", MentionBot: true})
	waitReply(t, fake, channel, "remember APPLE")
	waitReply(t, fake, channel, "remember PEAR")
	d.Stop(t)
	if !fake.WaitFor(waitFor, func() bool { return !fake.Connected() }) {
		t.Fatal("socket still open after stop")
	}

	fake.DropWhileDisconnected(true) // Slack gave up on it: only backfill finds it
	fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "which fruit, thread A?", ThreadTS: a})
	fake.DropWhileDisconnected(false)
	startStack(t, ctx, world, fake, gateway.Config{})
	fake.IgnoreAcks(1) // this one is redelivered: answered once all the same
	fake.Post(slacktest.Post{Channel: channel, User: allowed, Text: "which fruit, thread B?", ThreadTS: b})
	waitReply(t, fake, channel, "thread A?")
	waitReply(t, fake, channel, "thread B?")

	for _, tt := range []struct{ marker, own, other string }{
		{"thread A?", "APPLE", "PEAR"},
		{"thread B?", "PEAR", "APPLE"},
	} {
		req, ok := world.Model.LastRequestWith(tt.marker)
		if !ok {
			t.Fatalf("no model request for %q", tt.marker)
		}
		if in := req.InputText(); !strings.Contains(in, tt.own) || strings.Contains(in, tt.other) {
			t.Fatalf("%s after restart: own %q present=%v, other %q present=%v", tt.marker,
				tt.own, strings.Contains(in, tt.own), tt.other, strings.Contains(in, tt.other))
		}
	}
	if !fake.WaitFor(waitFor, func() bool { return fake.Unacked() == 0 }) {
		t.Fatalf("%d envelopes unacked", fake.Unacked())
	}
	for _, want := range []string{"remember APPLE", "remember PEAR", "thread A?", "thread B?"} {
		if n := botReplies(fake, channel, want); n != 1 {
			t.Errorf("%d replies containing %q, want 1", n, want)
		}
	}
	for _, m := range fake.Sent(channel) {
		if m.ThreadTS != a && m.ThreadTS != b {
			t.Errorf("reply outside the threads: %+v", m)
		}
	}
}
