package node

import (
	"os"
	"testing"

	"github.com/gatewayd/gatewayd/internal/pgtest"
)

// TestMain stops the shared PostgreSQL server (pgtest.Shared) after the
// tests, so its directory does not outlive the run.
func TestMain(m *testing.M) { os.Exit(pgtest.Run(m)) }
