package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"
)

// messageUsage is one message directory of a lane and what it holds.
type messageUsage struct {
	dir      string
	modified time.Time
	bytes    int64
	inUse    bool
}

// Prune removes the lane's oldest message directories not in use until the
// lane holds at most budget bytes, and returns how many bytes it freed. When
// the budget cannot be met it removes nothing and returns a *QuotaError.
func (s *Store) Prune(lane string, budget int64) (freed int64, err error) {
	if lane == "" {
		return 0, fmt.Errorf("%w: Prune needs a lane", ErrInvalid)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pruneLocked(lane, budget)
}

// pruneLocked is Prune with s.mu held. Everything on disk counts, files
// still being written included, so a save in progress is charged to the
// lane as soon as its bytes are, not only once published.
func (s *Store) pruneLocked(lane string, budget int64) (int64, error) {
	messages, err := s.laneUsage(lane)
	if err != nil {
		return 0, err
	}
	var total, kept int64
	for _, m := range messages {
		total += m.bytes
		if m.inUse {
			kept += m.bytes
		}
	}
	if total <= budget {
		return 0, nil
	}
	// Decide before removing anything: a quota that cannot be met should
	// not cost the lane its history on the way to saying so.
	if kept > budget {
		return 0, &QuotaError{Quota: budget, Kept: kept}
	}
	var freed int64
	for _, m := range messages { // oldest first
		if total-freed <= budget {
			break
		}
		if m.inUse {
			continue
		}
		if err := os.RemoveAll(m.dir); err != nil {
			return freed, fmt.Errorf("files: prune: %w", err)
		}
		freed += m.bytes
	}
	return freed, nil
}

// laneUsage lists the lane's message directories, oldest first: by
// modification time (a directory changes when a file is added to it), then
// by name so the order is the same on every run.
func (s *Store) laneUsage(lane string) ([]messageUsage, error) {
	laneDir := s.LaneDir(lane)
	entries, err := os.ReadDir(laneDir)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("files: read lane: %w", err)
	}
	pinned := s.pinned(lane)
	var messages []messageUsage
	for _, e := range entries {
		if !e.IsDir() || e.Name() == outName {
			continue
		}
		m, err := measure(filepath.Join(laneDir, e.Name()))
		if err != nil {
			return nil, err
		}
		m.inUse = pinned[e.Name()] || s.saving[m.dir] > 0
		messages = append(messages, m)
	}
	sort.Slice(messages, func(i, j int) bool {
		if !messages[i].modified.Equal(messages[j].modified) {
			return messages[i].modified.Before(messages[j].modified)
		}
		return messages[i].dir < messages[j].dir
	})
	return messages, nil
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

// measure sums the sizes of the regular files under dir.
func measure(dir string) (messageUsage, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return messageUsage{}, fmt.Errorf("files: measure: %w", err)
	}
	m := messageUsage{dir: dir, modified: info.ModTime()}
	err = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
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
		return messageUsage{}, fmt.Errorf("files: measure: %w", err)
	}
	return m, nil
}
