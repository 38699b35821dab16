package doctor

import (
	"context"
	"fmt"
	"strings"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/cluster/node"
	"github.com/gatewayd/gatewayd/config"
)

// checkCluster is doctor's view of the cluster on PostgreSQL: the live
// nodes and the leases this node (cluster.node_id) holds. A database no
// node has joined yet passes: the first start creates the tables.
func (d *doctor) checkCluster(ctx context.Context, cfg *config.Config) {
	db, err := node.OpenDB(cfg.Store.DSN)
	if err != nil {
		d.fail(err.Error(), "check store.dsn")
		return
	}
	defer db.Close()
	qctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	st, err := cluster.ReadStatus(qctx, db, cfg.Cluster.LeaseTTL)
	if err != nil {
		if strings.Contains(err.Error(), "cluster_nodes") { // not created yet
			d.pass("cluster: no node has joined this database yet")
			return
		}
		d.fail(fmt.Sprintf("cluster: %v", err), "check that the database server runs")
		return
	}
	live, lanes, poller := 0, 0, "none"
	for _, n := range st.Nodes {
		if n.Live {
			live++
		}
		if n.ID == cfg.Cluster.NodeID {
			lanes = n.LanesHeld
		}
		for _, o := range n.OtherLeases {
			if o == cluster.PollerLease {
				poller = n.ID
			}
		}
	}
	d.pass("cluster: %d of %d nodes live; this node (%s) holds %d lane leases; telegram poller: %s",
		live, len(st.Nodes), cfg.Cluster.NodeID, lanes, poller)
}
