package main

import (
	"os"
	"testing"

	"github.com/gatewayd/gatewayd/internal/pgtest"
)

// TestMain stops the shared PostgreSQL server (pgtest.Shared) and removes
// the daemon built for the process tests after the tests, so neither
// outlives the run.
func TestMain(m *testing.M) {
	code := pgtest.Run(m)
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}
