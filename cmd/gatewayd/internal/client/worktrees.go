package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/daemon"
	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/webconsole"
)

// Worktrees is `gatewayd worktrees prune`: remove now the lanes'
// worktrees kept past lanes.worktree_retention (the daemon does it daily).
// It asks the running daemon; with none running it opens the store itself.
func Worktrees(ctx context.Context, args []string, std cli.Stdio) error {
	f := cli.NewFlags("worktrees", std)
	pos, err := f.Parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 || pos[0] != "prune" {
		return cli.Usagef("worktrees takes one subcommand: prune")
	}
	cfg, err := f.Load()
	if err != nil {
		return err
	}
	var answer struct {
		Removed []string `json:"removed"`
	}
	err = NewAPI(cfg).Do(ctx, http.MethodPost, webconsole.AdminPrefix+"worktrees/prune", struct{}{}, &answer)
	if errors.Is(err, errDaemonDown) {
		answer.Removed, err = pruneOffline(ctx, cfg)
	}
	if err != nil {
		return fmt.Errorf("gatewayd: worktrees prune: %w", err)
	}
	for _, dir := range answer.Removed {
		fmt.Fprintf(std.Out, "removed %s\n", dir)
	}
	fmt.Fprintf(std.Out, "%d worktree(s) removed (lanes.worktree_retention: %s)\n", len(answer.Removed), cfg.Lanes.WorktreeRetention)
	return nil
}

func pruneOffline(ctx context.Context, cfg *config.Config) ([]string, error) {
	if _, err := os.Stat(cfg.DatabasePath()); err != nil && !cfg.Store.Postgres() {
		return nil, fmt.Errorf("no database at %s (is state_dir the daemon's? pass --config): %w", cfg.DatabasePath(), err)
	}
	st, err := daemon.OpenStore(ctx, cfg, store.Options{Logger: zap.NewNop()})
	if err != nil {
		return nil, fmt.Errorf("open store: %w", err)
	}
	defer st.Close()
	return daemon.PruneWorktrees(ctx, cfg, st, time.Now())
}
