package main

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/pgtest"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

const (
	shardZeroChannel = "10"      // in discordtest.GuildID (2000): shard 0 of 2
	shardOneGuildID  = "4194304" // (1<<22 >> 22) % 2 == 1
	discordUser      = "1"
)

func startDiscordShardNode(t *testing.T, bin, dsn, id string, dc *discordtest.Server, model *codextest.Model) *clusterProc {
	t.Helper()
	return writeClusterNodeWith(t, dsn, id, model, map[string]any{
		"cluster": map[string]any{"node_id": id, "lease_ttl": clusterTTL.String(), "discord_shards": 2},
		"discord": map[string]any{"token": discordtest.Token, "api_url": dc.URL(), "allowed_users": []string{discordUser}},
	}).start(t, bin)
}

func channelKey(channelID string) string {
	return gateway.Address{Platform: "discord", Kind: gateway.LaneChannel, ChatID: channelID}.SessionKey()
}

// echoes are the bot's answers in a channel.
func echoes(dc *discordtest.Server, channelID string) []string {
	var out []string
	for _, m := range dc.Sent(channelID) {
		if strings.Contains(m.Content, "ECHO") {
			out = append(out, m.Content)
		}
	}
	return out
}

func waitEchoes(t *testing.T, dc *discordtest.Server, channelID string, n int) {
	t.Helper()
	// The answer is sent by another process, but to the fake in this one:
	// WaitFor wakes on every message it receives.
	if !dc.WaitFor(60*time.Second, func() bool { return len(echoes(dc, channelID)) >= n }) {
		t.Fatalf("channel %s: %d answers %q, want %d", channelID, len(echoes(dc, channelID)), echoes(dc, channelID), n)
	}
}

// leaseHolder is the node holding lease name, "" if none or expired.
func leaseHolder(t *testing.T, db *sql.DB, name string) string {
	t.Helper()
	var holder string
	err := db.QueryRow(`SELECT holder FROM cluster_leases WHERE name = $1 AND expires_at > clock_timestamp()`, name).Scan(&holder)
	if errors.Is(err, sql.ErrNoRows) {
		return ""
	}
	if err != nil {
		t.Fatal(err)
	}
	return holder
}

// waitShardHolders waits until each shard's lease is held by the node
// placement over live gives it, and the fake sees that shard connected.
func waitShardHolders(t *testing.T, db *sql.DB, dc *discordtest.Server, live []string) map[int]string {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	holders := map[int]string{}
	for i := range 2 {
		name := cluster.ShardLeaseName(i, 2)
		want, err := cluster.Place(name, live)
		if err != nil {
			t.Fatal(err)
		}
		// The lease table is another process's: it is asked again.
		if !poll.Wait(time.Until(deadline), nil, func() bool { return leaseHolder(t, db, name) == want }) {
			t.Fatalf("shard %d: lease held by %q, want %s", i, leaseHolder(t, db, name), want)
		}
		if !dc.WaitShard(i, true, time.Until(deadline)) {
			t.Fatalf("shard %d never connected", i)
		}
		holders[i] = want
	}
	return holders
}

// laneWithShard picks a channel of shard 1 whose lane placement puts on
// the node that holds shard 1, so killing that node moves both: the answer
// after the kill needs the backfill and the shipped rollout.
func laneWithShard(t *testing.T, nodes []string) string {
	t.Helper()
	holder, err := cluster.Place(cluster.ShardLeaseName(1, 2), nodes)
	if err != nil {
		t.Fatal(err)
	}
	for n := 20; n < 1000; n++ {
		ch := fmt.Sprint(n)
		if owner, _ := cluster.Place(channelKey(ch), nodes); owner == holder {
			return ch
		}
	}
	t.Fatal("no channel placed with shard 1")
	return ""
}

// Three gatewayd nodes, the fake Discord with 2 shards (cluster.discord_shards
// 2), the real codex: each shard is run by the node placement gives it,
// guild messages on both shards are answered once; kill -9 of the node
// holding shard 1 and its channel's lane → within about the lease TTL
// another node runs both, and the message posted meanwhile (fetched by the
// new holder's backfill) is answered with the earlier exchange in the
// model's input (the rollout shipped and restored).
func TestProcessClusterDiscordShards(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs three daemons")
	}
	dsn := pgtest.Shared(t).NewDatabase(t)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	t.Cleanup(func() { logChannelIndex(t, db) })
	dc := discordtest.New(shardZeroChannel)
	t.Cleanup(dc.Close)
	ids := []string{"node-a", "node-b", "node-c"}
	shardOneChannel := laneWithShard(t, ids)
	dc.AddGuildChannel(shardOneChannel, shardOneGuildID)
	model := codextest.NewModel(t)
	bin := buildDaemon(t)
	nodes := map[string]*clusterProc{}
	for _, id := range ids {
		nodes[id] = startDiscordShardNode(t, bin, dsn, id, dc, model)
	}
	for _, id := range ids {
		waitHealthy(t, nodes[id].api, nodes[id].daemonProc)
	}
	holders := waitShardHolders(t, db, dc, ids)
	t.Logf("shard holders: %v", holders)

	// 1: a message on each shard, answered once.
	for _, ch := range []string{shardZeroChannel, shardOneChannel} {
		dc.Post(discordtest.Post{ChannelID: ch, AuthorID: discordUser, MentionBot: true, Content: fmt.Sprintf("remember code D-%s", ch)})
	}
	for _, ch := range []string{shardZeroChannel, shardOneChannel} {
		waitEchoes(t, dc, ch, 1)
	}

	// 2: kill -9 the holder of shard 1, once the lane's rollout is shipped
	// and every answer recorded as sent.
	victim := nodes[holders[1]]
	shipped := func(m map[string]any) bool { return m["lane"] == channelKey(shardOneChannel) }
	if !poll.Wait(60*time.Second, nil, func() bool {
		for _, p := range nodes {
			if len(logEvents(p.daemonProc, "cluster.shipped", shipped)) > 0 {
				return true
			}
		}
		return false
	}) {
		t.Fatal("the rollout of shard 1's lane was never shipped")
	}
	waitOutboxSent(t, dsn)
	victim.kill9(t)
	killed := time.Now()
	// Posted while no session runs shard 1: only the next holder's backfill
	// can fetch it.
	question := "what was my code? (shard 1)"
	dc.Post(discordtest.Post{ChannelID: shardOneChannel, AuthorID: discordUser, MentionBot: true, Content: question})
	var live []string
	for _, id := range ids {
		if id != victim.id {
			live = append(live, id)
		}
	}
	after := waitShardHolders(t, db, dc, live)
	if after[1] == victim.id {
		t.Fatalf("shard 1 still on the killed %s", victim.id)
	}
	waitEchoes(t, dc, shardOneChannel, 2)
	answered := time.Since(killed)
	laneOwner, _ := cluster.Place(channelKey(shardOneChannel), live)
	if got := logEvents(nodes[laneOwner].daemonProc, "cluster.lane_taken", laneIs(channelKey(shardOneChannel))); len(got) == 0 {
		t.Errorf("shard 1's lane was answered after the kill, but not by %s taking it over", laneOwner)
	}
	t.Logf("kill -9 of %s (shard 1 and its lane) → shard 1 on %s, lane on %s, answered in %v, lease_ttl %v",
		victim.id, after[1], laneOwner, answered.Round(time.Millisecond), clusterTTL)
	backfilled := func(m map[string]any) bool { return m["channel_id"] == shardOneChannel }
	if len(logEvents(nodes[after[1]].daemonProc, "discord.backfill", backfilled)) == 0 {
		t.Errorf("%s took shard 1 without backfilling channel %s: the message posted in the gap came some other way", after[1], shardOneChannel)
	}
	req, ok := model.LastRequestWith(question)
	if !ok {
		t.Fatal("the model got no request for the question posted after the kill")
	}
	if in := req.InputText(); !strings.Contains(in, "D-"+shardOneChannel) {
		t.Errorf("the answer after the kill lacks the earlier exchange:\n%s", in)
	}

	// `cluster status` names each shard's holder.
	out := clusterStatus(t, bin, nodes[after[0]])
	for i, holder := range after {
		found := false
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == holder && strings.Contains(line, cluster.ShardLeaseName(i, 2)) {
				found = true
			}
		}
		if !found {
			t.Errorf("cluster status does not show %s holding %s:\n%s", holder, cluster.ShardLeaseName(i, 2), out)
		}
	}

	// 3: shard 0 still answers; nothing twice.
	dc.Post(discordtest.Post{ChannelID: shardZeroChannel, AuthorID: discordUser, MentionBot: true, Content: "still there?"})
	waitEchoes(t, dc, shardZeroChannel, 2)
	waitOutboxSent(t, dsn)
	for _, ch := range []string{shardZeroChannel, shardOneChannel} {
		if got := echoes(dc, ch); len(got) != 2 {
			t.Errorf("channel %s: answers %q, want exactly 2", ch, got)
		}
	}
}

// logChannelIndex logs the Discord channel index when the test failed: a
// message unanswered after a takeover is first a question of whether its
// channel and cursor were there for the new holder's backfill.
func logChannelIndex(t *testing.T, db *sql.DB) {
	if !t.Failed() {
		return
	}
	rows, err := db.Query(`SELECT channel_id, engaged, last_message_id, seen_at FROM channel_index WHERE platform = 'discord'`)
	if err != nil {
		t.Logf("channel index: %v", err)
		return
	}
	defer rows.Close()
	for rows.Next() {
		var channel string
		var engaged, last, seen int64
		if err := rows.Scan(&channel, &engaged, &last, &seen); err != nil {
			t.Logf("channel index: %v", err)
			return
		}
		t.Logf("channel index: %s engaged=%d last=%d seen=%d", channel, engaged, last, seen)
	}
}
