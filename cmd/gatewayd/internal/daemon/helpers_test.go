package daemon

import (
	"testing"

	"github.com/gatewayd/gatewayd/internal/processtest"
	"github.com/gatewayd/gatewayd/store"
	"github.com/gatewayd/gatewayd/store/storetest"
)

// cleanEnv clears the GATEWAYD_* variables and points the XDG and home
// directories into a temporary one, so config.Load sees only the test's file.
func cleanEnv(t *testing.T) string { return processtest.CleanEnv(t) }

// openTestStore opens an empty SQLite store the platforms keep cursors in.
func openTestStore(t *testing.T) *store.Store { return storetest.Open(t) }
