package files

import (
	"context"
	"errors"
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

// OutInUse returns the paths of a lane's out copies still to be delivered
// (their outbox rows pending), which pruning must keep. An error keeps every
// out copy of the lane: not knowing is no licence to lose a file the user
// was told is coming.
type OutInUse func(lane string) (paths []string, err error)

// Store keeps inbound files under root (<state_dir>/files). It is safe for
// concurrent use, and it assumes it is the only writer under root.
type Store struct {
	root     string
	limits   Limits
	inUse    InUse
	outInUse OutInUse

	// mu serialises the quota check with publishing, so two saves into one
	// lane cannot both count the same free space, and guards saving. One
	// mutex serves every lane: what runs under it is a walk of one lane's
	// directory, a few removals and a link, never a download.
	mu sync.Mutex
	// saving counts the saves streaming into each message directory, and
	// the copies into each out directory (by path); pruning never removes
	// one, nor a temporary file in one, whatever inUse says.
	saving map[string]int
	// held counts the holds on each out copy (by path) that CopyOut made
	// and Release lifts: a copy whose outbox row is not committed yet is
	// known only to its turn, and pruning keeps it.
	held map[string]int
}

// New returns a Store rooted at root; nothing is created until a file is
// saved.
func New(root string, limits Limits, inUse InUse) *Store {
	if inUse == nil {
		inUse = func(string) []string { return nil }
	}
	return &Store{root: root, limits: limits.withDefaults(), inUse: inUse,
		outInUse: func(string) ([]string, error) { return nil, nil },
		saving:   map[string]int{}, held: map[string]int{}}
}

// SetOutInUse names the out copies still to be delivered (see OutInUse);
// without it only the holds of CopyOut keep them. Call it before the store
// is used.
func (s *Store) SetOutInUse(fn OutInUse) {
	if fn != nil {
		s.outInUse = fn
	}
}

// Limits returns the limits in force, defaults applied.
func (s *Store) Limits() Limits { return s.limits }

// LaneDir is the directory of a lane's files (an allowed root for send_file).
func (s *Store) LaneDir(lane string) string { return filepath.Join(s.root, dirName(lane)) }

// MessageDir is the directory of one message's files.
func (s *Store) MessageDir(lane, message string) string {
	return filepath.Join(s.LaneDir(lane), dirName(message))
}

// OutDir is where CopyOut puts a lane's outgoing snapshots. They count in
// the lane's quota and are pruned with its messages, oldest first, once
// delivered: a snapshot held (CopyOut until Release) or named by OutInUse
// is kept.
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
	root, err := s.laneRoot(lane, true)
	if err != nil {
		return Saved{}, err
	}
	defer root.Close()
	d := laneSub{root: root, rel: dirName(message), path: s.MessageDir(lane, message)}
	if err := s.beginSaving(d); err != nil {
		return Saved{}, err
	}
	saved, err := s.save(ctx, lane, d, SanitizeName(name), r)
	s.endSaving(d, err != nil)
	return saved, err
}

// laneSub is a directory of a lane's directory that a save or a copy
// writes in: its name within the lane's root and its path.
type laneSub struct {
	root *os.Root
	rel  string
	path string
}

func (s *Store) save(ctx context.Context, lane string, d laneSub, name string, r io.Reader) (Saved, error) {
	tmp, err := writeTemp(ctx, d.root, d.rel, r, s.limits.MaxBytes)
	if err != nil {
		return Saved{}, err
	}
	defer tmp.discard()
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.pruneLocked(d.root, lane, s.limits.LaneQuota); err != nil {
		return Saved{}, err
	}
	stored, err := tmp.publish(d.rel, name)
	if err != nil {
		return Saved{}, err
	}
	mime, isImage := Detect(stored, tmp.head)
	return Saved{Path: filepath.Join(d.path, stored), Name: stored, Size: tmp.size, MIME: mime, IsImage: isImage}, nil
}

// beginSaving creates the directory (through the lane's root: a link the
// lane put in its place fails the save instead of leading it elsewhere)
// and shields it from pruning until endSaving.
func (s *Store) beginSaving(d laneSub) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := d.root.MkdirAll(d.rel, dirMode); err != nil {
		return fmt.Errorf("files: save: %w", err)
	}
	s.saving[d.path]++
	return nil
}

// endSaving lifts beginSaving's shield. After a failed save it removes the
// directory if that left it empty, so a refused first file leaves nothing;
// the message's other files, and other saves still streaming, keep it.
func (s *Store) endSaving(d laneSub, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.saving[d.path]--
	if s.saving[d.path] > 0 {
		return
	}
	delete(s.saving, d.path)
	if failed {
		_ = d.root.Remove(d.rel) // fails, as meant, on a directory holding files
	}
}

// CopyOut snapshots the file ResolveOutbound returned into the lane's out
// directory, as the package's CopyOut does, held to Limits.MaxBytes, and
// makes room for it within the lane's quota first: a *RefusedError wrapping
// a *QuotaError when the files the lane still needs leave none. The copy is
// held, safe from pruning, until Release: the caller releases it once its
// outbox row is committed (OutInUse keeps it from then on) or it is dropped.
// It is written through the lane's root: an out directory the lane replaced
// with a link out of its directory fails the copy.
func (s *Store) CopyOut(lane, resolved string, allowedRoots []string) (string, error) {
	if lane == "" {
		return "", fmt.Errorf("%w: CopyOut needs a lane", ErrInvalid)
	}
	root, err := s.laneRoot(lane, true)
	if err != nil {
		return "", err
	}
	defer root.Close()
	d := laneSub{root: root, rel: outName, path: s.OutDir(lane)}
	if err := s.beginSaving(d); err != nil {
		return "", err
	}
	path, err := s.copyOut(lane, d, resolved, allowedRoots)
	s.endSaving(d, err != nil)
	return path, err
}

func (s *Store) copyOut(lane string, d laneSub, resolved string, allowedRoots []string) (string, error) {
	tmp, err := copyTemp(resolved, allowedRoots, d.root, d.rel, s.limits.MaxBytes)
	if err != nil {
		return "", err
	}
	defer tmp.discard()
	// Pruning, publishing and the hold are one section: no prune can see
	// the copy under its name before it is held.
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.pruneLocked(d.root, lane, s.limits.LaneQuota); err != nil {
		var q *QuotaError
		if errors.As(err, &q) {
			return "", &RefusedError{Reason: "no room left in this conversation's " + FormatSize(q.Quota) + " of files", Err: err}
		}
		return "", err
	}
	stored, err := tmp.publish(d.rel, SanitizeName(filepath.Base(resolved)))
	if err != nil {
		return "", err
	}
	path := filepath.Join(d.path, stored)
	s.held[path]++
	return path, nil
}

// Release lifts CopyOut's holds on paths. Releasing a path not held does
// nothing, so a caller may release whatever it dropped without counting.
func (s *Store) Release(paths ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, p := range paths {
		if s.held[p] <= 1 {
			delete(s.held, p)
			continue
		}
		s.held[p]--
	}
}
