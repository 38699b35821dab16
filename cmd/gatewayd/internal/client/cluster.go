package client

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gatewayd/gatewayd/cluster"
	"github.com/gatewayd/gatewayd/cluster/node"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
)

// Cluster is `gatewayd cluster status`: what the shared database says
// of the nodes and their leases. It needs no running daemon.
func Cluster(ctx context.Context, args []string, std cli.Stdio) error {
	f := cli.NewFlags("cluster", std)
	pos, err := f.Parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] != "status" {
		return cli.Usagef("cluster needs the subcommand status, got %q", pos)
	}
	cfg, err := f.Load()
	if err != nil {
		return err
	}
	if !cfg.Store.Postgres() {
		return cli.Usagef("cluster status needs store.driver postgres (a SQLite store is one node)")
	}
	db, err := node.OpenDB(cfg.Store.DSN)
	if err != nil {
		return err
	}
	defer db.Close()
	qctx, cancel := context.WithTimeout(ctx, queryTimeout)
	defer cancel()
	st, err := cluster.ReadStatus(qctx, db, cfg.Cluster.LeaseTTL)
	if err != nil {
		return fmt.Errorf("gatewayd: cluster status: %w", err)
	}
	printClusterStatus(std.Out, st)
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

// queryTimeout bounds the cluster status query.
const queryTimeout = 30 * time.Second
