package gatewaytest

import (
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// RandomBytes is n bytes, the same for the same seed, that no step of a
// file's path can compress or dedupe.
func RandomBytes(n int, seed byte) []byte {
	var key [32]byte
	key[0] = seed
	b := make([]byte, n)
	_, _ = rand.NewChaCha8(key).Read(b)
	return b
}

// StoredFile returns the bytes of the one file named name under root (a
// files store's directory); it fails the test unless there is exactly one.
func StoredFile(t testing.TB, root, name string) []byte {
	t.Helper()
	var found []string
	_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && d.Name() == name {
			found = append(found, path)
		}
		return nil
	})
	if len(found) != 1 {
		t.Fatalf("%s stored %d times under %s (%v), want once", name, len(found), root, found)
	}
	b, err := os.ReadFile(found[0])
	if err != nil {
		t.Fatal(err)
	}
	return b
}
