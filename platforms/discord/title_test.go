package discord_test

import (
	"testing"

	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
)

// Through the fake's wire: a message in a thread carries the thread's name
// and one in a channel the channel's; a thread the bot opens for a message
// carries none (the gateway names that new lane from the text).
func TestInboundCarriesTheChannelOrThreadName(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	srv.AddThread("11", channel, "5")
	r := start(t, baseConfig(t, srv))
	srv.Post(discordtest.Post{ChannelID: "11", AuthorID: allowed, Content: "in the thread", MentionBot: true})
	if in := r.sink.next(t); in.Title != "t11" {
		t.Errorf("thread message Title %q, want the thread's name t11", in.Title)
	}
	srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, Content: "in the channel", MentionBot: true})
	if in := r.sink.next(t); in.Title != "c"+channel {
		t.Errorf("channel message Title %q, want the channel's name c%s", in.Title, channel)
	}

	auto := newServer(t, channel)
	cfg := baseConfig(t, auto)
	cfg.AutoThread = true
	ra := start(t, cfg)
	auto.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, Content: "fix the build", MentionBot: true})
	if in := ra.sink.next(t); in.Title != "" {
		t.Errorf("auto-thread message Title %q, want none", in.Title)
	}
}
