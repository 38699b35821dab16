package files

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
)

const (
	// DefaultMaxBytes is the largest file stored or sent unless configured.
	DefaultMaxBytes = 20 << 20
	// DefaultLaneQuota is how much a lane keeps on disk unless configured.
	DefaultLaneQuota = 1 << 30
	// outName is the lane directory holding CopyOut's snapshots. Message
	// directories always end in "-<hash>", so none is ever called this.
	outName = "out"
	// dirMode and fileMode keep a lane's files to the daemon's user: they
	// are whatever people sent, possibly private.
	dirMode  = 0o700
	fileMode = 0o600
)

// Limits bounds what a Store keeps. A field of zero or less takes its default.
type Limits struct {
	MaxBytes  int64 // one file; DefaultMaxBytes
	LaneQuota int64 // all message directories of one lane; DefaultLaneQuota
}

func (l Limits) withDefaults() Limits {
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.LaneQuota <= 0 {
		l.LaneQuota = DefaultLaneQuota
	}
	return l
}

// InUse returns the message ids of a lane whose files must survive pruning:
// turns still queued or running that will read them. Nil means none.
type InUse func(lane string) (messageIDs []string)

// Store keeps inbound files under root (<state_dir>/files). It is safe for
// concurrent use, and it assumes it is the only writer under root.
type Store struct {
	root   string
	limits Limits
	inUse  InUse

	// mu serialises the quota check with publishing, so two saves into one
	// lane cannot both count the same free space, and guards saving. One
	// mutex serves every lane: what runs under it is a walk of one lane's
	// directory, a few removals and a link, never a download.
	mu sync.Mutex
	// saving counts the saves streaming into each message directory (by
	// path); pruning never removes one, whatever inUse says.
	saving map[string]int
}

// New returns a Store rooted at root; nothing is created until a file is
// saved.
func New(root string, limits Limits, inUse InUse) *Store {
	if inUse == nil {
		inUse = func(string) []string { return nil }
	}
	return &Store{root: root, limits: limits.withDefaults(), inUse: inUse, saving: map[string]int{}}
}

// Limits returns the limits in force, defaults applied.
func (s *Store) Limits() Limits { return s.limits }

// LaneDir is the directory of a lane's files (an allowed root for send_file).
func (s *Store) LaneDir(lane string) string { return filepath.Join(s.root, dirName(lane)) }

// MessageDir is the directory of one message's files.
func (s *Store) MessageDir(lane, message string) string {
	return filepath.Join(s.LaneDir(lane), dirName(message))
}

// OutDir is where CopyOut puts a lane's outgoing snapshots. It is outside
// the quota and never pruned: a snapshot is the sender's to remove once it
// is delivered.
func (s *Store) OutDir(lane string) string { return filepath.Join(s.LaneDir(lane), outName) }

// Saved describes a stored file.
type Saved struct {
	Path    string // absolute when root is
	Name    string // the name it was stored under, after sanitising and de-duplicating
	Size    int64
	MIME    string
	IsImage bool // png, jpeg, gif or webp by content: fit for a localImage item
}

// Save streams r into the message's directory under name (sanitised, and
// made unique within the message). It reads at most Limits.MaxBytes,
// returning a *TooLargeError past that; it makes room within the lane's
// quota by pruning old messages not in use, returning a *QuotaError when
// that is not enough. On any error nothing of the file is left behind.
func (s *Store) Save(ctx context.Context, lane, message, name string, r io.Reader) (Saved, error) {
	if lane == "" || message == "" {
		return Saved{}, fmt.Errorf("%w: Save needs a lane and a message id", ErrInvalid)
	}
	dir := s.MessageDir(lane, message)
	if err := s.beginSaving(dir); err != nil {
		return Saved{}, err
	}
	saved, err := s.save(ctx, lane, dir, SanitizeName(name), r)
	s.endSaving(dir, err != nil)
	return saved, err
}

func (s *Store) save(ctx context.Context, lane, dir, name string, r io.Reader) (Saved, error) {
	tmp, err := writeTemp(ctx, dir, r, s.limits.MaxBytes)
	if err != nil {
		return Saved{}, err
	}
	defer tmp.discard()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.pruneLocked(lane, s.limits.LaneQuota); err != nil {
		return Saved{}, err
	}
	stored, err := tmp.publish(dir, name)
	if err != nil {
		return Saved{}, err
	}
	mime, isImage := Detect(stored, tmp.head)
	return Saved{Path: filepath.Join(dir, stored), Name: stored, Size: tmp.size, MIME: mime, IsImage: isImage}, nil
}

// beginSaving creates the message directory and shields it from pruning
// until endSaving.
func (s *Store) beginSaving(dir string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return fmt.Errorf("files: save: %w", err)
	}
	s.saving[dir]++
	return nil
}

// endSaving lifts beginSaving's shield. After a failed save it removes the
// directory if that left it empty, so a refused first file leaves nothing;
// the message's other files, and other saves still streaming, keep it.
func (s *Store) endSaving(dir string, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saving[dir]--
	if s.saving[dir] > 0 {
		return
	}
	delete(s.saving, dir)
	if failed {
		_ = os.Remove(dir) // fails, as meant, on a directory holding files
	}
}
