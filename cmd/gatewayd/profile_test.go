package main

import (
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
)

// TestCPUProfileHook: with GATEWAYD_CPUPROFILE set the run writes a CPU
// profile there when it stops; unset, nothing is written.
func TestCPUProfileHook(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.prof")
	t.Setenv(envCPUProfile, path)
	stop, err := startCPUProfile(zap.NewNop())
	if err != nil {
		t.Fatalf("startCPUProfile: %v", err)
	}
	stop()
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("profile %s: %v (size %v), want a non-empty file", path, err, fi)
	}

	t.Setenv(envCPUProfile, "")
	stop, err = startCPUProfile(zap.NewNop())
	if err != nil {
		t.Fatalf("startCPUProfile unset: %v", err)
	}
	stop()
}

// TestCPUProfileHookBadPath: a profile file that cannot be created is an
// error naming the variable, not a run without the profile.
func TestCPUProfileHookBadPath(t *testing.T) {
	t.Setenv(envCPUProfile, filepath.Join(t.TempDir(), "missing", "cpu.prof"))
	if _, err := startCPUProfile(zap.NewNop()); err == nil {
		t.Fatal("startCPUProfile succeeded with a path in a missing directory")
	}
}
