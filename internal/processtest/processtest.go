// Package processtest marks process tests: tests that build or run gatewayd,
// the real codex app-server, a PostgreSQL server or a child process that is
// killed mid-work. `go test -short` (make check) skips them; make test runs
// them all.
package processtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// SkipWhenShort skips t under `go test -short`, saying what the test runs
// ("runs the real codex app-server") and that make test runs it.
func SkipWhenShort(t testing.TB, runs string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("process test (%s); make test runs it", runs)
	}
}

// CleanEnv clears the GATEWAYD_* variables (but the codex binary's) and
// points the state, config and home directories into a temporary one, so
// config.Load and a started gatewayd see only what the test gives them. It
// returns that directory.
func CleanEnv(t *testing.T) string {
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
