// Package processtest marks process tests: tests that build or run gatewayd,
// the real codex app-server, a PostgreSQL server or a child process that is
// killed mid-work. `go test -short` (make check) skips them; make test runs
// them all.
package processtest

import "testing"

// SkipWhenShort skips t under `go test -short`, saying what the test runs
// ("runs the real codex app-server") and that make test runs it.
func SkipWhenShort(t testing.TB, runs string) {
	t.Helper()
	if testing.Short() {
		t.Skipf("process test (%s); make test runs it", runs)
	}
}
