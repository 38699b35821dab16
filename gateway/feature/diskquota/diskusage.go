package diskquota

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// Measuring what a lane keeps on disk, for lanes.disk_quota (diskquota.go).
// The directories are written by commands a stranger may steer, so the
// walk trusts nothing in them:
//   - it counts allocated blocks (st_blocks*512), not sizes: a sparse
//     100 GB file costs what it occupies, and a file that occupies much
//     cannot claim to be small;
//   - it follows no link: every directory is opened beneath its parent's
//     descriptor with O_NOFOLLOW, so a symlink (or one swapped in during
//     the walk) cannot send it over the database or another lane;
//   - it is bounded, in entries and in depth, so a million files or a
//     directory chain a thousand deep cannot stall the lane's worker. A walk
//     that stops short says why, and the quota treats that lane as over:
//     hiding usage behind more files must not be a way around the quota.

// Bounds of one measurement. At 4-8µs per entry with the inodes cached
// (BenchmarkLaneUsage, on a busy shared 2-core machine), maxUsageEntries
// is one to two seconds of the lane's worker; a tree that large is past what a
// conversation's work needs (a large node_modules is 100k files). One open
// descriptor is held per level, so maxUsageDepth also bounds them.
const (
	maxUsageEntries = 250_000
	maxUsageDepth   = 128
)

// diskUsage is one measurement of a lane's directories.
type diskUsage struct {
	bytes   int64 // allocated, in bytes
	entries int   // files, directories and links seen
	// short says why the walk stopped before the end ("" when complete);
	// bytes is then a lower bound.
	short string
}

// measureDirs measures dirs, which need not exist, up to the bounds.
func measureDirs(dirs []string) diskUsage {
	w := duWalker{maxEntries: maxUsageEntries, maxDepth: maxUsageDepth}
	for _, d := range dirs {
		if w.short != "" {
			break
		}
		w.root(d)
	}
	return w.diskUsage
}

// duWalker sums allocated blocks under directories, without following
// links.
type duWalker struct {
	diskUsage
	maxEntries int
	maxDepth   int
}

const openDirFlags = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_CLOEXEC

// root adds dir and everything beneath it. A missing dir is empty; a dir
// that is a symlink is not the lane's to count.
func (w *duWalker) root(dir string) {
	fd, err := unix.Open(dir, openDirFlags, 0)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		return
	case err != nil:
		w.short = fmt.Sprintf("cannot read %s: %v", dir, err)
		return
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		_ = unix.Close(fd)
		w.short = fmt.Sprintf("cannot read %s: %v", dir, err)
		return
	}
	w.bytes += int64(st.Blocks) * 512
	w.dir(fd, dir, 0)
}

// dir adds the entries of the open directory fd (path names it in
// messages), and closes fd.
func (w *duWalker) dir(fd int, path string, depth int) {
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	for w.short == "" {
		names, err := f.Readdirnames(512)
		for _, name := range names {
			if w.entry(fd, path, name, depth); w.short != "" {
				return
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			return
		case err != nil:
			w.short = fmt.Sprintf("cannot read %s: %v", path, err)
			return
		}
	}
}

// entry adds one entry of the directory dirfd, and descends into it when
// it is a directory. An entry removed during the walk is skipped.
func (w *duWalker) entry(dirfd int, path, name string, depth int) {
	if w.entries++; w.entries > w.maxEntries {
		w.short = fmt.Sprintf("more than %d files", w.maxEntries)
		return
	}
	var st unix.Stat_t
	err := unix.Fstatat(dirfd, name, &st, unix.AT_SYMLINK_NOFOLLOW)
	switch {
	case errors.Is(err, unix.ENOENT):
		return
	case err != nil:
		w.short = fmt.Sprintf("cannot read %s: %v", filepath.Join(path, name), err)
		return
	}
	w.bytes += int64(st.Blocks) * 512
	if uint32(st.Mode)&unix.S_IFMT != unix.S_IFDIR {
		return
	}
	sub := filepath.Join(path, name)
	if depth+1 > w.maxDepth {
		w.short = fmt.Sprintf("directories nested deeper than %d levels (%s)", w.maxDepth, sub)
		return
	}
	fd, err := unix.Openat(dirfd, name, openDirFlags, 0)
	switch {
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ELOOP), errors.Is(err, unix.ENOTDIR):
		return // removed, or replaced by a link or a file, since the stat: counted as it was
	case err != nil:
		w.short = fmt.Sprintf("cannot read %s: %v", sub, err)
		return
	}
	w.dir(fd, sub, depth+1)
}
