// Package replyspool keeps the result of a turn whose commit waits for the
// database in a file of its own, written and synced before the wait
// begins. A process killed during a database outage then loses no answer:
// the next start (or this node's next takeover of the lane) commits the
// turn from its file and the reply goes out once, through the outbox,
// instead of the lane being told the turn was cut off.
//
// The spool is written only when a commit has failed for want of the
// database: a turn whose commit succeeds at once costs nothing here.
package replyspool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/store"
)

// maxFile bounds a spool file read back: a turn's reply and its user text
// are far smaller; a larger file is not ours.
const maxFile = 16 << 20

// Spool is a directory of spooled turns. A nil *Spool spools nothing.
type Spool struct {
	dir string
	log *zap.Logger
}

// New returns the spool kept in dir (the daemon's <state_dir>/replies),
// logging what its replays do to log (nil: nowhere); "" is no spool.
func New(dir string, log *zap.Logger) *Spool {
	if dir == "" {
		return nil
	}
	if log == nil {
		log = zap.NewNop()
	}
	return &Spool{dir: dir, log: log}
}

// entry is one spooled turn as written.
type entry struct {
	SpooledAt time.Time           `json:"spooled_at"`
	Turn      store.CompletedTurn `json:"turn"`
}

func (s *Spool) path(ct store.CompletedTurn) string {
	sum := sha256.Sum256([]byte(ct.SessionKey + "\x00" + ct.TurnID))
	return filepath.Join(s.dir, hex.EncodeToString(sum[:12])+".json")
}

// Put writes ct to its file and syncs it (and the directory) before
// returning, so it is there after a crash.
func (s *Spool) Put(ct store.CompletedTurn) error {
	if s == nil {
		return nil
	}
	b, err := json.Marshal(entry{SpooledAt: time.Now().UTC(), Turn: ct})
	if err != nil {
		return fmt.Errorf("replyspool: encode turn %s: %w", ct.TurnID, err)
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return fmt.Errorf("replyspool: %w", err)
	}
	tmp, err := os.CreateTemp(s.dir, ".put-*")
	if err != nil {
		return fmt.Errorf("replyspool: %w", err)
	}
	defer os.Remove(tmp.Name()) // after the rename: gone already
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		return fmt.Errorf("replyspool: write %s: %w", tmp.Name(), err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("replyspool: sync %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("replyspool: %w", err)
	}
	if err := os.Rename(tmp.Name(), s.path(ct)); err != nil {
		return fmt.Errorf("replyspool: %w", err)
	}
	return syncDir(s.dir)
}

// Remove forgets ct: committed, or settled another way.
func (s *Spool) Remove(ct store.CompletedTurn) error {
	if s == nil {
		return nil
	}
	if err := os.Remove(s.path(ct)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("replyspool: %w", err)
	}
	return nil
}

// ErrUnreadable marks a spool file that could not be read back: it is
// renamed with the suffix ".unreadable", kept for the operator, and not
// tried again.
var ErrUnreadable = errors.New("replyspool: unreadable file")

// Pending returns the spooled turns of lane ("" every lane's), oldest
// first. Files that cannot be read back are set aside and reported
// (ErrUnreadable) with the turns that could.
func (s *Spool) Pending(lane string) ([]store.CompletedTurn, error) {
	if s == nil {
		return nil, nil
	}
	names, err := os.ReadDir(s.dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("replyspool: %w", err)
	}
	var entries []entry
	var unreadable []error
	for _, de := range names {
		if !de.Type().IsRegular() || !strings.HasSuffix(de.Name(), ".json") {
			continue
		}
		e, err := s.read(de.Name())
		if err != nil {
			unreadable = append(unreadable, s.setAside(de.Name(), err))
			continue
		}
		if lane == "" || e.Turn.SessionKey == lane {
			entries = append(entries, e)
		}
	}
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].SpooledAt.Before(entries[j].SpooledAt) })
	turns := make([]store.CompletedTurn, len(entries))
	for i, e := range entries {
		turns[i] = e.Turn
	}
	return turns, errors.Join(unreadable...)
}

// setAside renames an unreadable file out of the way and words why.
func (s *Spool) setAside(name string, cause error) error {
	from := filepath.Join(s.dir, name)
	if err := os.Rename(from, from+".unreadable"); err != nil {
		return fmt.Errorf("%w: %w (and it could not be set aside: %v)", ErrUnreadable, cause, err)
	}
	return fmt.Errorf("%w: %w; kept as %s.unreadable", ErrUnreadable, cause, name)
}

func (s *Spool) read(name string) (entry, error) {
	var e entry
	f, err := os.Open(filepath.Join(s.dir, name))
	if err != nil {
		return e, fmt.Errorf("replyspool: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return e, fmt.Errorf("replyspool: read %s: %w", name, err)
	}
	if len(b) > maxFile {
		return e, fmt.Errorf("replyspool: %s is over %d bytes", name, maxFile)
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return e, fmt.Errorf("replyspool: %s: %w", name, err)
	}
	return e, nil
}

// Committer commits a turn (the store).
type Committer interface {
	CommitTurn(ctx context.Context, t store.CompletedTurn) (store.CommitResult, error)
}

// Waiting reports whether a spooled turn still waits for its commit: its
// journal entry is there and nobody told the lane it was cut off (another
// node that took the lane meanwhile may have, or rerun it).
type Waiting func(ct store.CompletedTurn) (bool, error)

// Replay commits the spooled turns of lane ("" every lane's), oldest
// first, and removes each one committed, refused for good, or no longer
// waiting (dropped: its message was settled elsewhere). A commit of a turn
// already committed is a no-op, so a crash between the commit and the
// removal does not answer twice. A transient failure (the database still
// away) stops it with the error and keeps the rest spooled. A file that
// cannot be read is set aside and logged (ErrUnreadable), not returned:
// it must not stop the start. done counts the turns settled. At start-up
// (lane "") it also removes what a crash left half-written.
func (s *Spool) Replay(ctx context.Context, c Committer, lane string, waiting Waiting) (done int, err error) {
	if s == nil {
		return 0, nil
	}
	if lane == "" {
		s.removePartial()
	}
	turns, err := s.Pending(lane)
	if errors.Is(err, ErrUnreadable) {
		s.log.Error("recover.spool_unreadable", zap.Error(err))
	} else if err != nil {
		return 0, err
	}
	for _, ct := range turns {
		wait, err := waiting(ct)
		if err != nil {
			return done, fmt.Errorf("replyspool: turn %s of %s: %w", ct.TurnID, ct.SessionKey, err)
		}
		var res store.CommitResult
		if wait {
			res, err = c.CommitTurn(ctx, ct)
			if err != nil && store.Transient(err) {
				return done, fmt.Errorf("replyspool: commit turn %s of %s: %w", ct.TurnID, ct.SessionKey, err)
			}
		}
		if rerr := s.Remove(ct); rerr != nil {
			return done, rerr
		}
		done++
		// A refused commit (err) cannot succeed later: the turn is dropped, said here.
		s.log.Info("recover.spooled_reply", zap.String("lane", ct.SessionKey), zap.String("turn", ct.TurnID),
			zap.Bool("committed", wait && err == nil), zap.Bool("settled_elsewhere", !wait),
			zap.Bool("stale", res.Stale), zap.Bool("duplicate", res.Duplicate), zap.Error(err))
	}
	return done, nil
}

// removePartial removes the temporary files of Puts a crash cut short.
func (s *Spool) removePartial() {
	partial, _ := filepath.Glob(filepath.Join(s.dir, ".put-*"))
	for _, p := range partial {
		if err := os.Remove(p); err != nil {
			s.log.Warn("recover.spool_partial_kept", zap.String("path", p), zap.Error(err))
		}
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("replyspool: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("replyspool: sync %s: %w", dir, err)
	}
	return nil
}
