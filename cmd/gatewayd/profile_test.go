package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
)

// profileHooks are the developer's recording hooks: each, with its
// variable set, writes its file when the run stops; unset, nothing starts.
var profileHooks = []struct {
	env   string
	start func(*zap.Logger) (func(), error)
}{
	{envCPUProfile, startCPUProfile},
	{envTrace, startTrace},
}

func TestProfileHooks(t *testing.T) {
	for _, h := range profileHooks {
		t.Run(h.env, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "run.out")
			t.Setenv(h.env, path)
			stop, err := h.start(zap.NewNop())
			if err != nil {
				t.Fatalf("start: %v", err)
			}
			stop()
			if fi, err := os.Stat(path); err != nil || fi.Size() == 0 {
				t.Fatalf("%s: %v (size %v), want a non-empty file", path, err, fi)
			}

			t.Setenv(h.env, "")
			stop, err = h.start(zap.NewNop())
			if err != nil {
				t.Fatalf("start unset: %v", err)
			}
			stop()
		})
	}
}

// A file that cannot be created is an error naming the variable, not a run
// without the recording.
func TestProfileHooksBadPath(t *testing.T) {
	for _, h := range profileHooks {
		t.Run(h.env, func(t *testing.T) {
			t.Setenv(h.env, filepath.Join(t.TempDir(), "missing", "run.out"))
			_, err := h.start(zap.NewNop())
			if err == nil {
				t.Fatal("started with a path in a missing directory")
			}
			if got := err.Error(); !strings.Contains(got, h.env) {
				t.Errorf("error %q does not name %s", got, h.env)
			}
		})
	}
}
