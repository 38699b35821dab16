package cluster

import "fmt"

// The leases of the singletons a cluster elects, beside the lanes'
// (LanePrefix). The daemon, `gatewayd cluster status` and doctor all read
// these names, so they live with the leases.
const (
	// PollerLease is held by the one node that polls Telegram.
	PollerLease = "telegram:poller"
	// ShardLeasePrefix names the leases of Discord's gateway shards:
	// "discord:shard:<i>/<n>". The holder runs shard i of n; the count is
	// in the name so nodes configured with different counts never share a
	// lease.
	ShardLeasePrefix = "discord:shard:"
)

// ShardLeaseName is the lease of Discord shard i of n.
func ShardLeaseName(i, n int) string { return fmt.Sprintf("%s%d/%d", ShardLeasePrefix, i, n) }
