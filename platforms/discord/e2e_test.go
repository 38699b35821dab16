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

// startStack runs gatewayd (real store and codex) with a Discord adapter
// talking to the fake Discord.
func startStack(t *testing.T, ctx context.Context, w *gatewaytest.World, srv *discordtest.Server) *gatewaytest.Stack {
	t.Helper()
	return startStackWith(t, ctx, w, srv, gateway.Config{})
}

// startStackWith is startStack with a gateway configuration of the test's.
func startStackWith(t *testing.T, ctx context.Context, w *gatewaytest.World, srv *discordtest.Server, cfg gateway.Config) *gatewaytest.Stack {
	t.Helper()
	return w.Start(t, ctx, cfg, func(st *store.Store) []gateway.Platform {
		dc, err := discord.New(discord.Config{Token: discordtest.Token, APIURL: srv.URL(),
			AllowedUsers: []string{allowed, allowed2}, Cursor: st, Logger: zaptest.NewLogger(t)})
		if err != nil {
			t.Fatalf("discord.New: %v", err)
		}
		return []gateway.Platform{dc}
	})
}

// TestEndToEndThreadsKeepTheirContextAcrossRestart: two Discord threads talk
// to the real codex (fake model); the daemon restarts between messages, and
// one message is posted while it is down (backfill). Each thread's later turn
// carries its own first message and not the other's; nothing is answered twice.
func TestEndToEndThreadsKeepTheirContextAcrossRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	srv, world := newServer(t, channel), gatewaytest.NewWorld(t)
	srv.AddThread("11", channel, "5")
	srv.AddThread("12", channel, "5")
	say := func(thread, text string, mention bool) {
		srv.Post(discordtest.Post{ChannelID: thread, AuthorID: allowed, Content: text, MentionBot: mention})
	}
	replies := func(thread, want string) int {
		n := 0
		for _, m := range srv.BotMessages(thread) {
			if strings.Contains(m.Content, want) {
				n++
			}
		}
		return n
	}
	waitReply := func(thread, want string) {
		t.Helper()
		if !srv.WaitFor(60*time.Second, func() bool { return replies(thread, want) > 0 }) {
			t.Fatalf("no reply containing %q in thread %s: %+v", want, thread, srv.BotMessages(thread))
		}
	}

	d := startStack(t, ctx, world, srv)
	say("11", "remember APPLE", true)
	say("12", "remember PEAR", true)
	waitReply("11", "ECHO: [u"+allowed+"]: remember APPLE") // who spoke, in a shared place
	waitReply("12", "ECHO: [u"+allowed+"]: remember PEAR")
	d.Stop(t)

	// Posted while the daemon is down: answered once after the restart.
	say("11", "which fruit, thread 11?", false)
	startStack(t, ctx, world, srv)
	say("12", "which fruit, thread 12?", false)
	waitReply("11", "thread 11?")
	waitReply("12", "thread 12?")

	for _, tt := range []struct{ name, marker, own, other string }{
		{name: "thread 11", marker: "thread 11?", own: "APPLE", other: "PEAR"},
		{name: "thread 12", marker: "thread 12?", own: "PEAR", other: "APPLE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			req, ok := world.Model.LastRequestWith(tt.marker)
			if !ok {
				t.Fatalf("no model request for %q", tt.marker)
			}
			input := req.InputText()
			if !strings.Contains(input, tt.own) || strings.Contains(input, tt.other) {
				t.Fatalf("context after restart: own %q present=%v, other %q present=%v",
					tt.own, strings.Contains(input, tt.own), tt.other, strings.Contains(input, tt.other))
			}
		})
	}
	// /new starts a fresh conversation in thread 11 only.
	srv.SlashCommand("11", "new", allowed)
	say("11", "fresh start, thread 11?", false)
	say("12", "still PEAR, thread 12?", false)
	waitReply("11", "fresh start, thread 11?")
	waitReply("12", "still PEAR, thread 12?")
	for _, r := range world.Model.Requests() {
		switch last := r.LastUserText(); {
		case strings.Contains(last, "fresh start") && strings.Contains(r.InputText(), "APPLE"):
			t.Error("after /new, thread 11 still carries APPLE")
		case strings.Contains(last, "still PEAR") && !strings.Contains(r.InputText(), "remember PEAR"):
			t.Error("/new in thread 11 reset thread 12")
		}
	}
	for _, c := range []struct{ thread, text string }{
		{"11", "remember APPLE"}, {"12", "remember PEAR"}, {"11", "which fruit, thread 11?"},
		{"12", "which fruit, thread 12?"}, {"11", "fresh start"}, {"12", "still PEAR"},
	} {
		if n := replies(c.thread, c.text); n != 1 {
			t.Errorf("thread %s: %d replies containing %q, want 1: %+v", c.thread, n, c.text, srv.BotMessages(c.thread))
		}
	}
}
