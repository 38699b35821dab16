package main

import (
	"os"
	"testing"

	"github.com/gatewayd/gatewayd/internal/pgtest"
)

// TestMain stops the shared PostgreSQL server (pgtest.Shared) and removes
// the daemon built for the process tests after the tests, so neither
// outlives the run.
//
// Started with peerChildEnv, the binary is instead the client that
// TestProcessOtherLocalUsersNeedTheToken runs as another user.
func TestMain(m *testing.M) {
	if os.Getenv(peerChildEnv) != "" {
		os.Exit(peerChild())
	}
	code := pgtest.Run(m)
	if builtDir != "" {
		os.RemoveAll(builtDir)
	}
	os.Exit(code)
}
