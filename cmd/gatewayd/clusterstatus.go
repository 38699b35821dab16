package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gatewayd/gatewayd/cluster"
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
	db, _, err := openClusterDB(cfg.Store.DSN)
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
		if l.Name == pollerLease && l.ExpiresIn > 0 {
			poller = fmt.Sprintf("%s (token %d)", l.Holder, l.Token)
		}
	}
	fmt.Fprintf(w, "telegram poller: %s\n", poller)
}

func ago(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }
