package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// TestTraceHook: with GATEWAYD_TRACE set the run writes an execution trace
// there when it stops; unset, nothing is started.
func TestTraceHook(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.trace")
	t.Setenv(envTrace, path)
	stop, err := startTrace(zap.NewNop())
	if err != nil {
		t.Fatalf("startTrace: %v", err)
	}
	stop()
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
		t.Fatalf("trace %s: %v (size %v), want a non-empty file", path, err, fi)
	}

	t.Setenv(envTrace, "")
	stop, err = startTrace(zap.NewNop())
	if err != nil {
		t.Fatalf("startTrace unset: %v", err)
	}
	stop()
}

// TestTraceHookBadPath: a trace file that cannot be created is an error
// naming the variable, not a run without the trace.
func TestTraceHookBadPath(t *testing.T) {
	t.Setenv(envTrace, filepath.Join(t.TempDir(), "missing", "run.trace"))
	_, err := startTrace(zap.NewNop())
	if err == nil {
		t.Fatal("startTrace succeeded with a path in a missing directory")
	}
	if got := err.Error(); !strings.Contains(got, envTrace) {
		t.Errorf("error %q does not name %s", got, envTrace)
	}
}
