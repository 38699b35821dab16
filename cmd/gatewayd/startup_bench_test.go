package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// BenchmarkStartupToReady measures what an operator waits for after
// `systemctl start`: from exec of the built binary to READY=1, which the
// daemon sends only once the store is open (migrations applied), the real
// codex app-server answered initialize and the API lane listens. The goal is
// well under a second.
func BenchmarkStartupToReady(b *testing.B) {
	codexBin := codextest.CodexBinary(b)
	model := codextest.NewModel(b)
	bin := buildDaemon(b)
	dir := b.TempDir()
	cfgFile := writeProcessConfig(b, dir, map[string]any{
		"state_dir": filepath.Join(dir, "state"),
		"log":       map[string]any{"level": "warn", "format": "json"},
		"codex": map[string]any{
			"command": codexBin, "args": codextest.Args(model.URL), "home": codextest.Home(b),
			"cwd": filepath.Join(dir, "work"),
		},
		"api": map[string]any{"listen": freeAddr(b)},
	})
	notify := listenNotify(b)
	readies := func(n int) func([]string) bool {
		return func(states []string) bool { return strings.Count(strings.Join(states, " "), "READY=1") >= n }
	}
	b.ResetTimer()
	for i := range b.N {
		d := startDaemon(b, bin, cfgFile, dir, "bench", notify.path)
		notify.waitFor(b, "READY=1", readies(i+1))
		b.StopTimer()
		if code := d.terminate(b, 30*time.Second); code != 0 {
			b.Fatalf("exit %d after SIGTERM:\n%s", code, d.logs())
		}
		b.StartTimer()
	}
}
