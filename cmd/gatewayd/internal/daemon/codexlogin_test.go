package daemon

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// The login command lanes are told to run is the bundled codex's path when
// that is what runs, else "codex".
func TestCodexLoginNamesTheBundledCodex(t *testing.T) {
	bundled := filepath.Join(t.TempDir(), "codex")
	old := codex.BundledCommand
	codex.BundledCommand = bundled
	t.Cleanup(func() { codex.BundledCommand = old })
	t.Setenv("PATH", t.TempDir())
	if got := codexLogin("codex"); got != "codex" {
		t.Errorf("without a bundle: %q, want codex", got)
	}
	if err := os.WriteFile(bundled, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got := codexLogin("codex"); got != bundled {
		t.Errorf("with a bundle: %q, want %s", got, bundled)
	}
	if got := codexLogin("/opt/other/codex"); got != "codex" {
		t.Errorf("an explicit command: %q, want codex", got)
	}
}
