package diskquota

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeSized(t testing.TB, path string, n int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, n), 0o600); err != nil {
		t.Fatal(err)
	}
}

// What is counted: allocated blocks of everything beneath the roots, not
// what a link points to, not a sparse file's apparent size.
func TestMeasureDirs(t *testing.T) {
	lane, outside := t.TempDir(), t.TempDir()
	writeSized(t, filepath.Join(lane, "a", "b", "data"), 1<<20)
	writeSized(t, filepath.Join(outside, "huge"), 4<<20)
	if err := os.Symlink(outside, filepath.Join(lane, "link")); err != nil {
		t.Fatal(err)
	}
	sparse, err := os.Create(filepath.Join(lane, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sparse.Truncate(100 << 30); err != nil {
		t.Fatal(err)
	}
	sparse.Close()

	u := measureDirs([]string{lane, filepath.Join(lane, "missing")})
	if u.short != "" {
		t.Fatalf("short: %s", u.short)
	}
	if u.bytes < 1<<20 || u.bytes > 2<<20 {
		t.Errorf("bytes = %d, want about 1 MiB (the data file, not the link's target or the sparse size)", u.bytes)
	}
	if u.entries != 5 { // a, a/b, a/b/data, link, sparse: nothing of outside
		t.Errorf("entries = %d, want 5", u.entries)
	}

	// A root that is itself a link is not the lane's.
	if u := measureDirs([]string{filepath.Join(lane, "link")}); u.bytes != 0 || u.short != "" {
		t.Errorf("a linked root counted: %+v", u)
	}
}

// A walk past its bounds stops and says why, so the quota counts the lane
// as over rather than trusting a partial sum.
func TestMeasureDirsBounds(t *testing.T) {
	dir := t.TempDir()
	for i := range 20 {
		writeSized(t, filepath.Join(dir, fmt.Sprint(i)), 1)
	}
	w := duWalker{maxEntries: 10, maxDepth: 8}
	w.root(dir)
	if !strings.Contains(w.short, "more than 10 files") {
		t.Errorf("entry bound: short = %q", w.short)
	}

	deep := t.TempDir()
	p := deep
	for range 5 {
		p = filepath.Join(p, "d")
	}
	writeSized(t, filepath.Join(p, "f"), 1)
	w = duWalker{maxEntries: 100, maxDepth: 3}
	w.root(deep)
	if !strings.Contains(w.short, "deeper than 3 levels") {
		t.Errorf("depth bound: short = %q", w.short)
	}

	locked := filepath.Join(t.TempDir(), "locked")
	writeSized(t, filepath.Join(locked, "hidden"), 1<<20)
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(locked, 0o700) })
	if os.Getuid() != 0 { // root reads it anyway
		if u := measureDirs([]string{filepath.Dir(locked)}); !strings.Contains(u.short, "cannot read") {
			t.Errorf("unreadable directory: short = %q", u.short)
		}
	}
}

// BenchmarkLaneUsage measures a lane of n small files spread over
// directories of 100, as a checkout or node_modules is.
func BenchmarkLaneUsage(b *testing.B) {
	for _, n := range []int{1000, 20000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			dir := b.TempDir()
			for i := range n {
				writeSized(b, filepath.Join(dir, fmt.Sprint(i/100), fmt.Sprint(i)), 100)
			}
			b.ResetTimer()
			for b.Loop() {
				if u := measureDirs([]string{dir}); u.short != "" || u.entries < n {
					b.Fatalf("measure: %+v", u)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/file")
		})
	}
}
