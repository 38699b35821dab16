package worktree

import (
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Snapshots at no cost when nothing changed. A full snapshot
// stats every file of the worktree (a second at 100,000 files); most turns
// change a few files or none. So each worktree's directories are watched
// with inotify from its first snapshot on, and the next snapshot asks git
// only about the paths that changed since the last one — none: the last
// snapshot is the answer. Events are read when a snapshot needs them, not
// by a goroutine: the kernel queues them as the changes happen, so what
// changed before the snapshot began is in the queue when it is drained,
// whichever process made the change (a turn's command, the operator, the
// daemon's own /undo). Whatever the watch cannot vouch for — a queue that
// overflowed, a directory moved, a watch that could not be added, a tree
// not yet watched — makes the next snapshot a full one.

// watchMask are the events that change what a snapshot records.
const watchMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE |
	unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF |
	unix.IN_DONT_FOLLOW | unix.IN_ONLYDIR

// Bounds: past maxWatchedDirs a tree is not watched (its snapshots are
// full ones), past maxDirtyPaths the next snapshot is a full one, and at
// most maxWatchedTrees trees are watched at once (the least recently
// snapshotted lose theirs).
const (
	maxWatchedDirs  = 50000
	maxDirtyPaths   = 5000
	maxWatchedTrees = 64
)

// watcher is the process's one inotify instance.
type watcher struct {
	mu    sync.Mutex
	fd    int                     // -1: inotify unavailable; every snapshot is full
	trees map[string]*watchedTree // by worktree directory
	wds   map[int32]watchedDir
	clock uint64
}

type watchedDir struct {
	tree *watchedTree
	rel  string // the directory, relative to the worktree ("" for its top)
}

// watchedTree is what changed in one worktree since its last snapshot.
type watchedTree struct {
	dir   string
	wds   []int32
	dirty map[string]struct{}
	// full says the next snapshot cannot rely on dirty.
	full bool
	// last is the snapshot taken when dirty was last emptied, and head the
	// branch's commit it was taken on.
	last, head string
	used       uint64
}

var (
	watchOnce sync.Once
	watches   *watcher
)

func theWatcher() *watcher {
	watchOnce.Do(func() {
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
		if err != nil {
			fd = -1
		}
		watches = &watcher{fd: fd, trees: make(map[string]*watchedTree), wds: make(map[int32]watchedDir)}
	})
	return watches
}

// changes is what a snapshot of dir may rely on: the last snapshot and
// the paths changed since (relative to dir), or full when it must look at
// everything. It starts watching dir if it is not watched. The dirty set
// is emptied: the caller's snapshot covers it, and a change made while it
// runs is queued for the next one.
func (w *watcher) changes(dir string) (last, head string, paths []string, full bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fd < 0 {
		return "", "", nil, true
	}
	w.drain()
	t := w.trees[dir]
	if t == nil {
		t = w.watch(dir)
	}
	w.clock++
	t.used = w.clock
	last, head, full = t.last, t.head, t.full || t.last == ""
	for p := range t.dirty {
		paths = append(paths, p)
	}
	t.dirty = make(map[string]struct{})
	t.full = false
	if full {
		w.rewatch(t)
	}
	return last, head, paths, full
}

// took records the snapshot just taken of dir on head; failed forgets
// the last one, so the next snapshot is a full one.
func (w *watcher) took(dir, snapshot, head string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t := w.trees[dir]; t != nil {
		t.last, t.head = snapshot, head
	}
}

func (w *watcher) failed(dir string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t := w.trees[dir]; t != nil {
		t.last, t.full = "", true
	}
}

// watch starts watching dir, making room first.
func (w *watcher) watch(dir string) *watchedTree {
	if len(w.trees) >= maxWatchedTrees {
		var oldest *watchedTree
		for _, t := range w.trees {
			if oldest == nil || t.used < oldest.used {
				oldest = t
			}
		}
		w.unwatch(oldest)
		delete(w.trees, oldest.dir)
	}
	t := &watchedTree{dir: dir, dirty: make(map[string]struct{}), full: true}
	w.trees[dir] = t
	return t
}

// rewatch drops t's watches and adds one to every directory of the
// worktree but its .git, each before listing it, so a directory made
// while this runs is seen either by the listing or by its parent's event.
func (w *watcher) rewatch(t *watchedTree) {
	w.unwatch(t)
	if !w.addTree(t, "") {
		w.unwatch(t)
		t.full = true // too many directories, or watches ran out: full snapshots
	}
}

func (w *watcher) addTree(t *watchedTree, rel string) bool {
	if len(t.wds) >= maxWatchedDirs {
		return false
	}
	wd, err := unix.InotifyAddWatch(w.fd, filepath.Join(t.dir, rel), watchMask)
	if err != nil {
		// A directory gone meanwhile is no change to miss: its parent's
		// event marked it.
		return errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR)
	}
	w.wds[int32(wd)] = watchedDir{tree: t, rel: rel}
	t.wds = append(t.wds, int32(wd))
	entries, err := os.ReadDir(filepath.Join(t.dir, rel))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	for _, e := range entries {
		if !e.IsDir() || (rel == "" && e.Name() == ".git") {
			continue // IsDir is false for a symlink: links are not followed
		}
		if !w.addTree(t, filepath.Join(rel, e.Name())) {
			return false
		}
	}
	return true
}

func (w *watcher) unwatch(t *watchedTree) {
	for _, wd := range t.wds {
		_, _ = unix.InotifyRmWatch(w.fd, uint32(wd))
		delete(w.wds, wd)
	}
	t.wds = nil
}

// drain reads every queued event and marks what it names.
func (w *watcher) drain() {
	var buf [64 << 10]byte
	for {
		n, err := unix.Read(w.fd, buf[:])
		if n <= 0 || err != nil {
			return // EAGAIN: the queue is empty
		}
		// Each record: wd, mask, cookie, len (native-endian 32-bit words),
		// then len bytes of NUL-padded name.
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(buf[off:]))
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			size := int(binary.NativeEndian.Uint32(buf[off+12:]))
			start := off + unix.SizeofInotifyEvent
			if start+size > n {
				break
			}
			w.mark(wd, mask, strings.TrimRight(string(buf[start:start+size]), "\x00"))
			off = start + size
		}
	}
}

// mark records one event.
func (w *watcher) mark(wd int32, mask uint32, name string) {
	if mask&unix.IN_Q_OVERFLOW != 0 {
		for _, t := range w.trees {
			t.full = true
		}
		return
	}
	d, ok := w.wds[wd]
	if !ok {
		return
	}
	t := d.tree
	switch {
	case mask&unix.IN_IGNORED != 0:
		delete(w.wds, wd)
		return
	case mask&(unix.IN_DELETE_SELF|unix.IN_MOVE_SELF) != 0:
		// The directory itself went or moved: its parent's event names it
		// when it is inside the tree; a moved one's watches now carry old
		// paths, so start over.
		t.full = true
		return
	case mask&unix.IN_ISDIR != 0 && mask&(unix.IN_MOVED_FROM|unix.IN_MOVED_TO) != 0:
		t.full = true
		return
	}
	rel := filepath.Join(d.rel, name)
	if d.rel == "" && name == ".git" {
		return
	}
	if mask&unix.IN_ISDIR != 0 && mask&unix.IN_CREATE != 0 && !w.addTree(t, rel) {
		t.full = true
	}
	if len(t.dirty) >= maxDirtyPaths {
		t.full = true
		return
	}
	t.dirty[rel] = struct{}{}
}
