package daemon

import (
	"slices"
	"testing"

	"github.com/gatewayd/gatewayd/config"
)

// Without a cluster, cluster.discord_shards > 1 runs every shard in the one
// process; 1 (the default), or no Discord, leaves one unsharded session.
func TestDiscordShardSetsWithoutCluster(t *testing.T) {
	for _, c := range []struct {
		shards int
		token  string
		want   []int
	}{{4, "t", []int{0, 1, 2, 3}}, {1, "t", nil}, {4, "", nil}} {
		cfg := &config.Config{}
		cfg.Cluster.DiscordShards, cfg.Discord.Token = c.shards, c.token
		sets := (&clusterMember{}).discordShardSets(cfg)
		if c.want == nil {
			if sets != nil {
				t.Errorf("shards %d, token %q: got a shard source, want one unsharded session", c.shards, c.token)
			}
			continue
		}
		if got := <-sets; !slices.Equal(got, c.want) {
			t.Errorf("shards %d: set %v, want %v", c.shards, got, c.want)
		}
	}
}
