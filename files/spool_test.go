package files

import (
	"os"
	"path/filepath"
	"testing"
)

// TestResetSpoolEmptiesAndLocksDown: what a killed daemon left is removed
// and counted, and the directory ends up 0700 however it was found.
func TestResetSpoolEmptiesAndLocksDown(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "spool")
	mustMkdir(t, filepath.Join(dir, "nested"))
	mustWrite(t, filepath.Join(dir, "gatewayd-upload-1"), "12345")
	mustWrite(t, filepath.Join(dir, "nested", "x"), "123")
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	n, size, err := ResetSpool(dir)
	if err != nil || n != 2 || size != 8 {
		t.Fatalf("ResetSpool = %d files, %d bytes, %v; want 2 files, 8 bytes", n, size, err)
	}
	if got := entries(t, dir); len(got) != 0 {
		t.Errorf("spool holds %q after the reset", got)
	}
	info, err := os.Stat(dir)
	if err != nil || info.Mode().Perm() != 0o700 {
		t.Fatalf("spool mode = %v, %v; want 0700", info.Mode().Perm(), err)
	}
}

func TestResetSpoolCreatesTheDirectory(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state", "spool")
	if n, size, err := ResetSpool(dir); err != nil || n != 0 || size != 0 {
		t.Fatalf("ResetSpool = %d, %d, %v; want an empty new directory", n, size, err)
	}
	if info, err := os.Stat(dir); err != nil || !info.IsDir() || info.Mode().Perm() != 0o700 {
		t.Fatalf("spool = %v, %v; want a 0700 directory", info, err)
	}
}
