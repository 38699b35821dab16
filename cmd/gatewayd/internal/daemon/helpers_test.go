package daemon

import (
	"context"
	"path/filepath"
	"testing"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/internal/processtest"
	"github.com/gatewayd/gatewayd/store"
)

// cleanEnv clears the GATEWAYD_* variables and points the XDG and home
// directories into a temporary one, so config.Load sees only the test's file.
func cleanEnv(t *testing.T) string { return processtest.CleanEnv(t) }

// openTestStore opens an empty SQLite store the platforms keep cursors in.
func openTestStore(t *testing.T) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "gatewayd.db"), store.Options{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}
