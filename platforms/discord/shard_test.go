package discord_test

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/platforms/discord"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
	"github.com/gatewayd/gatewayd/store"
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

// One adapter driven by shard sets (cluster mode): it is ready with no
// shard held, connects a session per shard given, hangs up the shards
// taken away, and a shard's new session backfills only that shard's
// channels (guild 2000 on shard 0, guild 4194304 on shard 1).
func TestShardSetsConnectAndBackfillTheirShardsOnly(t *testing.T) {
	t.Parallel()
	srv := newServer(t, channel)
	srv.AddGuildChannel("20", shardOneGuild)
	sets := make(chan []int, 1)
	cfg := baseConfig(t, srv)
	cfg.Shard = discord.Shard{Count: 2}
	cfg.ShardSets = sets
	r := start(t, cfg) // ready before any shard is held

	sets <- []int{0, 1}
	for id := range 2 {
		if !srv.WaitShard(id, true, waitFor) {
			t.Fatalf("shard %d never connected", id)
		}
	}
	zero := srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, Content: "zero", MentionBot: true})
	waitDelivery(t, r, zero)
	one := srv.Post(discordtest.Post{ChannelID: "20", AuthorID: allowed, Content: "one", MentionBot: true})
	waitDelivery(t, r, one)

	// Both let go: what is posted now reaches no session.
	sets <- nil
	for id := range 2 {
		if !srv.WaitShard(id, false, waitFor) {
			t.Fatalf("shard %d still connected after being let go", id)
		}
	}
	missedZero := srv.Post(discordtest.Post{ChannelID: channel, AuthorID: allowed, Content: "missed zero", MentionBot: true})
	missedOne := srv.Post(discordtest.Post{ChannelID: "20", AuthorID: allowed, Content: "missed one", MentionBot: true})

	// Shard 1 again: its READY backfills channel 20 only; a live message
	// after it marks that nothing of shard 0 came first.
	sets <- []int{1}
	if !srv.WaitShard(1, true, waitFor) {
		t.Fatal("shard 1 never reconnected")
	}
	if in := r.sink.next(t); in.MessageID != missedOne {
		t.Fatalf("first delivery after shard 1 came back = %q (%q), want the missed %q", in.MessageID, in.Text, missedOne)
	}
	live := srv.Post(discordtest.Post{ChannelID: "20", AuthorID: allowed, Content: "live one", MentionBot: true})
	if in := r.sink.next(t); in.MessageID != live {
		t.Fatalf("delivery %q (%q), want the live %q: shard 1's backfill fetched another shard's channel", in.MessageID, in.Text, live)
	}

	sets <- []int{0, 1}
	if in := r.sink.next(t); in.MessageID != missedZero {
		t.Fatalf("first delivery after shard 0 came back = %q (%q), want the missed %q", in.MessageID, in.Text, missedZero)
	}
}

func TestShardSetsNeedACount(t *testing.T) {
	cfg := discord.Config{Token: discordtest.Token, ShardSets: make(chan []int)}
	if _, err := discord.New(cfg); !errors.Is(err, discord.ErrConfig) {
		t.Errorf("New with shard sets and no count: err = %v, want ErrConfig", err)
	}
}

func TestShardOf(t *testing.T) {
	for _, c := range []struct {
		guild       string
		count, want int
	}{{"", 2, 0}, {"2000", 2, 0}, {shardOneGuild, 2, 1}, {shardOneGuild, 1, 0}, {"12582912", 4, 3}} {
		if got := discord.ShardOf(c.guild, c.count); got != c.want {
			t.Errorf("ShardOf(%q, %d) = %d, want %d", c.guild, c.count, got, c.want)
		}
	}
}

// Two nodes' adapters on one database, in cluster mode. Node X starts
// holding shard 0; only then does node Y, holding shard 1, get the first
// message of channel 20 (a lane X's start never saw). Y lets shard 1 go, a
// message is posted while no session runs it, and X takes shard 1: its
// READY reads the index from the database as it is now and backfills
// channel 20, from Y's cursor on (Y's message is not delivered again).
func TestShardTakenLaterBackfillsALaneAnotherNodeCreated(t *testing.T) {
	t.Parallel()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "state.db"), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	srv := newServer(t, channel)
	srv.AddGuildChannel("20", shardOneGuild)
	node := func(first []int) (*running, chan []int) {
		sets := make(chan []int, 1)
		cfg := baseConfig(t, srv)
		cfg.Cursor = st
		cfg.Shard = discord.Shard{Count: 2}
		cfg.ShardSets = sets
		r := start(t, cfg)
		sets <- first
		for _, id := range first {
			if !srv.WaitShard(id, true, waitFor) {
				t.Fatalf("shard %d never connected", id)
			}
		}
		return r, sets
	}
	x, xSets := node([]int{0})
	y, ySets := node([]int{1})

	first := srv.Post(discordtest.Post{ChannelID: "20", AuthorID: allowed, Content: "first, on Y", MentionBot: true})
	waitDelivery(t, y, first)
	waitCursor(t, st, "20", first)
	ySets <- nil
	if !srv.WaitShard(1, false, waitFor) {
		t.Fatal("shard 1 still connected after Y let it go")
	}
	gap := srv.Post(discordtest.Post{ChannelID: "20", AuthorID: allowed, Content: "in the gap", MentionBot: true})

	xSets <- []int{0, 1}
	if in := x.sink.next(t); in.MessageID != gap {
		t.Fatalf("X's first delivery after taking shard 1 = %q (%q), want the gap message %q", in.MessageID, in.Text, gap)
	}
	live := srv.Post(discordtest.Post{ChannelID: "20", AuthorID: allowed, Content: "live on X", MentionBot: true})
	waitDelivery(t, x, live)
	assertDeliveries(t, "X", x.sink.deliveries(), gap, live)
}

// waitCursor waits until the index's cursor of channel is messageID: the
// adapter writes it after the sink accepted the message, with no event
// that a test could wait on.
func waitCursor(t *testing.T, st *store.Store, channel, messageID string) {
	t.Helper()
	want, err := strconv.ParseInt(messageID, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	var recs []store.ChannelRecord
	if !poll.Wait(waitFor, nil, func() bool {
		recs, err = st.Channels(context.Background(), discord.PlatformName, 0)
		if err != nil {
			return true
		}
		for _, r := range recs {
			if r.ChannelID == channel && r.LastMessageID == want {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("channel %s: cursor never reached %s: %+v", channel, messageID, recs)
	}
	if err != nil {
		t.Fatal(err)
	}
}
