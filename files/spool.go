package files

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ResetSpool makes dir the empty, private directory uploads are spooled to
// (<state_dir>/spool) while a platform accepts them: created if missing,
// its mode set to 0700 even if it existed with another, and everything in
// it removed. Whatever is there at start was left by a daemon that died
// mid-upload; no message refers to it, so nobody will ever remove it
// otherwise. It returns how many files and bytes it removed.
//
// The caller must be the only process using dir: the daemon calls it once
// the store is open, whose lock keeps a second daemon on the same state
// directory from getting that far.
func ResetSpool(dir string) (removed int, bytes int64, err error) {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return 0, 0, fmt.Errorf("files: spool: %w", err)
	}
	if err := os.Chmod(dir, dirMode); err != nil {
		return 0, 0, fmt.Errorf("files: spool: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, fmt.Errorf("files: spool: %w", err)
	}
	for _, e := range entries {
		path := filepath.Join(dir, e.Name())
		n, size := countFiles(path)
		if err := os.RemoveAll(path); err != nil {
			return removed, bytes, fmt.Errorf("files: spool: %w", err)
		}
		removed, bytes = removed+n, bytes+size
	}
	return removed, bytes, nil
}

// countFiles counts the regular files at or under path and their bytes,
// as well as it can: it only reports what a removal freed.
func countFiles(path string) (n int, size int64) {
	_ = filepath.WalkDir(path, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			n, size = n+1, size+fi.Size()
		}
		return nil
	})
	return n, size
}
