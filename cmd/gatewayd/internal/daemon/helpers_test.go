package daemon

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"
)

// cleanEnv clears the GATEWAYD_* variables and points the XDG and home
// directories into a temporary one, so config.Load sees only the test's file.
func cleanEnv(t *testing.T) string {
	t.Helper()
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GATEWAYD_") && name != "GATEWAYD_CODEX_BIN" {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
	dir := t.TempDir()
	t.Setenv("STATE_DIRECTORY", "")
	t.Setenv("XDG_STATE_HOME", filepath.Join(dir, "state"))
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("HOME", dir)
	return dir
}

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
