package discord_test

import (
	"errors"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/discord"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
)

// shardOneGuild is a guild id on shard 1 of 2: (1<<22 >> 22) % 2 == 1.
// discordtest.GuildID (2000) is on shard 0.
const shardOneGuild = "4194304"

func TestShardsEachReceiveExactlyTheirGuilds(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel) // channel 10 is in GuildID, shard 0
	srv.AddGuildChannel("20", shardOneGuild)
	srv.AddDM("30", allowed)

	shards := make([]*running, 2)
	for id := range shards {
		cfg := baseConfig(t, srv)
		cfg.Shard = discord.Shard{ID: id, Count: 2}
		shards[id] = start(t, cfg)
	}

	onZero := srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, Content: "guild on shard 0", MentionBot: true})
	onOne := srv.Post(discordtest.Post{ChannelID: "20", AuthorID: allowed, Content: "guild on shard 1", MentionBot: true})
	dm := srv.Post(discordtest.Post{ChannelID: "30", AuthorID: allowed, Content: "a DM"})

	// Each shard handles events in order, so a last message on each shard
	// marks the point by which anything misrouted would have arrived.
	lastZero := srv.Post(discordtest.Post{ChannelID: "30", AuthorID: allowed, Content: "last on shard 0"}) // DMs: shard 0
	waitDelivery(t, shards[0], lastZero)
	lastOne := srv.Post(discordtest.Post{ChannelID: "20", AuthorID: allowed, Content: "last on shard 1", MentionBot: true})
	waitDelivery(t, shards[1], lastOne)

	assertDeliveries(t, "shard 0", shards[0].sink.deliveries(), onZero, dm, lastZero)
	assertDeliveries(t, "shard 1", shards[1].sink.deliveries(), onOne, lastOne)
}

func waitDelivery(t *testing.T, r *running, messageID string) {
	t.Helper()
	for {
		if in := r.sink.next(t); in.MessageID == messageID {
			return
		}
	}
}

// assertDeliveries checks the deliveries are exactly want, in order.
func assertDeliveries(t *testing.T, who string, got []gateway.Inbound, want ...string) {
	t.Helper()
	var ids []string
	for _, in := range got {
		ids = append(ids, in.MessageID)
	}
	if len(ids) != len(want) {
		t.Fatalf("%s got messages %v, want %v", who, ids, want)
	}
	for i := range want {
		if ids[i] != want[i] {
			t.Errorf("%s got messages %v, want %v", who, ids, want)
		}
	}
}

func TestShardConfigIsChecked(t *testing.T) {
	for _, sh := range []discord.Shard{{ID: 2, Count: 2}, {ID: -1, Count: 2}, {ID: 0, Count: -1}, {ID: 1, Count: 1}} {
		cfg := discord.Config{Token: discordtest.Token, Shard: sh}
		if _, err := discord.New(cfg); !errors.Is(err, discord.ErrConfig) {
			t.Errorf("New with shard %+v: err = %v, want ErrConfig", sh, err)
		}
	}
}
