package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/cluster/node"
	"github.com/gatewayd/gatewayd/config"
)

// cmdCluster is `gatewayd cluster status`: what the shared database says
// of the nodes and their leases. It needs no running daemon.
func cmdCluster(ctx context.Context, args []string, std stdio) error {
	f := newFlags("cluster", std)
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] != "status" {
		return usagef("cluster needs the subcommand status, got %q", pos)
	}
	cfg, err := f.load()
	if err != nil {
		return err
	}
	if !cfg.Store.Postgres() {
		return usagef("cluster status needs store.driver postgres (a SQLite store is one node)")
	}
	db, err := node.OpenDB(cfg.Store.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	qctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	st, err := cluster.ReadStatus(qctx, db, cfg.Cluster.LeaseTTL)
	if err != nil {
		return fmt.Errorf("gatewayd: cluster status: %w", err)
	}
	printClusterStatus(std.out, st)
	return nil
}

func printClusterStatus(w io.Writer, st cluster.Status) {
	if len(st.Nodes) == 0 {
		fmt.Fprintln(w, "no nodes have joined this database")
		return
	}
	fmt.Fprintf(w, "%-24s %-5s %-10s %-10s %6s  %s\n", "NODE", "LIVE", "HEARTBEAT", "UP", "LANES", "OTHER LEASES")
	for _, n := range st.Nodes {
		live := "no"
		if n.Live {
			live = "yes"
		}
		other := strings.Join(n.OtherLeases, ",")
		if n.ExpiredLeases > 0 {
			other = strings.TrimPrefix(other+fmt.Sprintf(",%d expired", n.ExpiredLeases), ",")
		}
		fmt.Fprintf(w, "%-24s %-5s %-10s %-10s %6d  %s\n", n.ID, live, ago(n.HeartbeatAge), ago(n.Up), n.LanesHeld, other)
	}
	poller := "none"
	for _, l := range st.Leases {
		if l.Name == cluster.PollerLease && l.ExpiresIn > 0 {
			poller = fmt.Sprintf("%s (token %d)", l.Holder, l.Token)
		}
	}
	fmt.Fprintf(w, "telegram poller: %s\n", poller)
}

func ago(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }

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
