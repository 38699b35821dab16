package files

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// A lane's directory is one of its agent's workspace roots: whatever runs
// there may replace out/, a message directory or a file in them with a
// link. Every file the store opens, writes, lists or removes in it goes
// through an os.Root of the lane's directory, so no link, and no
// swap made between a check and an open, leads the daemon out of the lane:
// not a write through a linked out/, not an upload of a linked copy's
// target, not a prune of another directory's files. The lane's directory
// itself sits in the files root, which no lane can write.

// ErrOutsideLane refuses a path that is not in the lane's directory.
var ErrOutsideLane = errors.New("files: the path is not in the lane's directory")

// laneRoot opens the lane's directory as a root, creating it first when
// create is set; without it a lane with no directory yet gives an error
// satisfying errors.Is(err, fs.ErrNotExist).
func (s *Store) laneRoot(lane string, create bool) (*os.Root, error) {
	dir := s.LaneDir(lane)
	if create {
		if err := os.MkdirAll(dir, dirMode); err != nil {
			return nil, fmt.Errorf("files: lane directory: %w", err)
		}
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("files: lane directory: %w", err)
	}
	return root, nil
}

// inLane is path relative to the lane's directory, for its root; path
// must lie in that directory (lexically: the root keeps links from
// leading out).
func (s *Store) inLane(lane, path string) (string, error) {
	rel, err := filepath.Rel(s.LaneDir(lane), filepath.Clean(path))
	if err != nil || !filepath.IsLocal(rel) {
		return "", fmt.Errorf("%w: %s", ErrOutsideLane, filepath.Base(path))
	}
	return rel, nil
}

// Open opens a file of the lane's directory for reading: an out copy to
// upload or serve, a stored attachment to transcribe. It must be a regular
// file reached without leaving the lane's directory; the open does not
// block, so a FIFO put in its place cannot stall the caller.
func (s *Store) Open(lane, path string) (*os.File, error) {
	rel, err := s.inLane(lane, path)
	if err != nil {
		return nil, err
	}
	root, err := s.laneRoot(lane, false)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("files: open: %w", err)
	}
	info, err := f.Stat()
	if err == nil && !info.Mode().IsRegular() {
		err = fmt.Errorf("%w: %s", ErrNotRegular, filepath.Base(path))
	}
	if err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("files: open: %w", err)
	}
	return f, nil
}

// Remove removes a file of the lane's directory (a copy no turn took, an
// attachment of a message not recorded) without following a link out of
// it: a link in its place is removed, not its target. Gone already is no
// error.
func (s *Store) Remove(lane, path string) error {
	rel, err := s.inLane(lane, path)
	if err != nil {
		return err
	}
	root, err := s.laneRoot(lane, false)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.Remove(rel); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("files: remove: %w", err)
	}
	return nil
}
