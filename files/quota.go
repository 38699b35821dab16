package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// usage is one unit pruning removes whole, and what it holds: a message
// directory of the lane, or one file of its out directory.
type usage struct {
	path     string // absolute, as saving and held know it
	rel      string // within the lane's root, where it is measured and removed
	modified time.Time
	bytes    int64
	inUse    bool
	// name is a message directory's name, or an out copy's file name
	// (out set): what the in-use lists name it by.
	name string
	out  bool
}

// Prune removes the lane's oldest message directories and out copies not
// in use until the lane holds at most budget bytes, and returns how many
// bytes it freed. When the budget cannot be met it removes nothing and
// returns a *QuotaError.
func (s *Store) Prune(lane string, budget int64) (freed int64, err error) {
	if lane == "" {
		return 0, fmt.Errorf("%w: Prune needs a lane", ErrInvalid)
	}
	root, err := s.laneRoot(lane, false)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	defer root.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pruneLocked(root, lane, budget)
}

// pruneLocked is Prune with s.mu held, in the lane's root (root.go): what
// it measures and removes is the lane's, whatever links the lane put in
// its directory. Everything on disk counts, files still being written
// included, so a save in progress is charged to the lane as soon as its
// bytes are, not only once published.
func (s *Store) pruneLocked(root *os.Root, lane string, budget int64) (int64, error) {
	units, err := s.laneUsage(root, lane)
	if err != nil {
		return 0, err
	}
	var total, kept int64
	for _, u := range units {
		total += u.bytes
		if u.inUse {
			kept += u.bytes
		}
	}
	if total <= budget {
		return 0, nil
	}
	// Only now ask which files the lane still needs: the answer comes
	// from the database, and most saves fit without pruning anything.
	kept += s.markNeeded(lane, units)
	// Decide before removing anything: a quota that cannot be met should
	// not cost the lane its history on the way to saying so.
	if kept > budget {
		return 0, &QuotaError{Quota: budget, Kept: kept}
	}
	var freed int64
	for _, u := range units { // oldest first
		if total-freed <= budget {
			break
		}
		if u.inUse {
			continue
		}
		if err := root.RemoveAll(u.rel); err != nil {
			return freed, fmt.Errorf("files: prune: %w", err)
		}
		freed += u.bytes
	}
	return freed, nil
}

// laneUsage lists the lane's message directories and out copies together,
// oldest first: by modification time (a directory changes when a file is
// added to it, a copy when it is written), then by path so the order is
// the same on every run.
func (s *Store) laneUsage(root *os.Root, lane string) ([]usage, error) {
	laneDir := s.LaneDir(lane)
	entries, err := fs.ReadDir(root.FS(), ".")
	if err != nil {
		return nil, fmt.Errorf("files: read lane: %w", err)
	}
	var units []usage
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if e.Name() == outName {
			out, err := s.outUsage(root, laneDir)
			if err != nil {
				return nil, err
			}
			units = append(units, out...)
			continue
		}
		u, err := measure(root, laneDir, e.Name())
		if err != nil {
			return nil, err
		}
		u.name, u.inUse = e.Name(), s.saving[u.path] > 0
		units = append(units, u)
	}
	sort.Slice(units, func(i, j int) bool {
		if !units[i].modified.Equal(units[j].modified) {
			return units[i].modified.Before(units[j].modified)
		}
		return units[i].path < units[j].path
	})
	return units, nil
}

// outUsage lists the copies in the lane's out directory, each a unit of
// its own. In use here are those held by CopyOut and, while a copy is
// being made, the temporary files (a temporary file left by a crash is
// not, and goes); markNeeded adds those still to be sent.
func (s *Store) outUsage(root *os.Root, laneDir string) ([]usage, error) {
	dir := filepath.Join(laneDir, outName)
	entries, err := fs.ReadDir(root.FS(), outName)
	if err != nil {
		return nil, fmt.Errorf("files: read out directory: %w", err)
	}
	copying := s.saving[dir] > 0
	units := make([]usage, 0, len(entries))
	for _, e := range entries {
		u, err := measure(root, laneDir, filepath.Join(outName, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue // a copy's temporary file, removed without s.mu
		}
		if err != nil {
			return nil, err
		}
		temp := strings.HasPrefix(e.Name(), tempPrefix)
		u.name, u.out = e.Name(), true
		u.inUse = s.held[u.path] > 0 || (temp && copying)
		units = append(units, u)
	}
	return units, nil
}

// markNeeded marks in use the units the lane still needs by the lists
// from outside: its messages not yet processed (InUse) and its out copies
// still to be sent (OutInUse; every copy when that cannot tell). It
// returns the bytes it marked.
func (s *Store) markNeeded(lane string, units []usage) (marked int64) {
	pinned := s.pinned(lane)
	var wanted map[string]bool
	keepAll := false
	for i := range units {
		u := &units[i]
		if u.inUse {
			continue
		}
		if u.out && wanted == nil && !keepAll {
			pending, err := s.outInUse(lane)
			keepAll = err != nil
			wanted = make(map[string]bool, len(pending))
			for _, p := range pending {
				wanted[filepath.Base(p)] = true
			}
		}
		if (u.out && (keepAll || wanted[u.name])) || (!u.out && pinned[u.name]) {
			u.inUse = true
			marked += u.bytes
		}
	}
	return marked
}

// pinned maps the directory names of the lane's messages in use.
func (s *Store) pinned(lane string) map[string]bool {
	ids := s.inUse(lane)
	set := make(map[string]bool, len(ids))
	for _, id := range ids {
		set[dirName(id)] = true
	}
	return set
}

// measure sums the sizes of the regular files at or under rel, within the
// lane's root (laneDir is its path).
func measure(root *os.Root, laneDir, rel string) (usage, error) {
	info, err := root.Lstat(rel)
	if err != nil {
		return usage{}, fmt.Errorf("files: measure: %w", err)
	}
	m := usage{path: filepath.Join(laneDir, rel), rel: rel, modified: info.ModTime()}
	if !info.IsDir() {
		// A file, or a link the lane left: only a regular file counts, and
		// nothing is read through a link.
		if info.Mode().IsRegular() {
			m.bytes = info.Size()
		}
		return m, nil
	}
	err = fs.WalkDir(root.FS(), filepath.ToSlash(rel), func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			var fi fs.FileInfo
			if fi, err = d.Info(); err == nil {
				m.bytes += fi.Size()
			}
		}
		// A failed save removes its temporary file without s.mu: gone is
		// not an error, it is zero bytes.
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	})
	if err != nil {
		return usage{}, fmt.Errorf("files: measure: %w", err)
	}
	return m, nil
}
