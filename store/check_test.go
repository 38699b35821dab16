package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"go.uber.org/zap"
)

// Inspect reads a database the daemon holds open (and locked) without
// disturbing it, and reports a missing file as such.
func TestInspectBesideAnOpenStore(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "PRAGMA quick_check of a file (TestPostgresInspect)")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gatewayd.db")
	if _, err := Inspect(ctx, path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v, want ErrNotExist", err)
	}
	st, err := Open(ctx, path, Options{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	h, err := Inspect(ctx, path)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	if h.QuickCheck != "ok" || h.SchemaVersion != len(migrations) || h.WantVersion != len(migrations) {
		t.Errorf("Inspect = %+v, want ok at version %d", h, len(migrations))
	}
	if err := st.Ping(ctx); err != nil {
		t.Errorf("the store stopped working after Inspect: %v", err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if h, err := Inspect(ctx, path); err != nil || h.QuickCheck != "ok" {
		t.Errorf("Inspect of a closed database = %+v, %v", h, err)
	}
}

func TestInspectReportsCorruption(t *testing.T) {
	t.Parallel()
	sqliteOnly(t, "a corrupted file")
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gatewayd.db")
	st, err := Open(ctx, path, Options{Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Page 2 onwards holds the tables: scribble over it, keep the header.
	junk := make([]byte, 4096)
	for i := range junk {
		junk[i] = 0xA5
	}
	if _, err := f.WriteAt(junk, 4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	h, err := Inspect(ctx, path)
	if err == nil && h.QuickCheck == "ok" {
		t.Errorf("a scribbled database passed: %+v", h)
	}
}
