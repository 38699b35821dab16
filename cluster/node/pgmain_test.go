package node

import (
	"context"
	"os"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/internal/pgtest"
)

// TestMain stops the shared PostgreSQL server (pgtest.Shared) after the
// tests, so its directory does not outlive the run.
func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }

// startNode starts a node of this process on dsn, as the daemon does.
func startNode(ctx context.Context, dsn, id, codexHome, stateDir string, ttl time.Duration, log *zap.Logger) (*Coordinator, error) {
	return Start(ctx, Config{DSN: dsn, NodeID: id, CodexHome: codexHome, StateDir: stateDir, LeaseTTL: ttl, Log: log})
}
