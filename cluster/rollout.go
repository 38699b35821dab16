package cluster

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// Rollout errors callers branch on.
var (
	// ErrNoRollout: no rollout file (locally) or no shipped chunks (in the
	// database) for the thread.
	ErrNoRollout = errors.New("cluster: no rollout for thread")
	// ErrRolloutRewritten: the local file is shorter than what was shipped,
	// or differs from it, so it is no longer the append-only log that was
	// shipped; shipping it on top would corrupt the copy.
	ErrRolloutRewritten = errors.New("cluster: rollout file rewritten since it was shipped")
)

// DivergedDir is where, under CODEX_HOME, Restore keeps a local rollout it
// replaced: outside sessions/, so neither codex nor FindRollout takes it
// for the thread's, and never pruned, so it can be inspected.
const DivergedDir = "diverged_rollouts"

// maxChunk bounds one rollout_chunks row, so a first ship of a long thread
// does not build one huge bytea.
const maxChunk = 1 << 20

// tailCheck is how much of the last shipped chunk Ship compares with the
// file before appending: enough to catch a truncate-and-rewrite, cheap
// enough to do every turn.
const tailCheck = 64 << 10

// Rollouts ships codex rollout files (a thread's history) to the database
// and restores them, so a thread can resume on another node.
type Rollouts struct {
	db *sql.DB
}

// NewRollouts ships to and restores from db (migrated with Migrate).
func NewRollouts(db *sql.DB) *Rollouts { return &Rollouts{db: db} }

// Shipped says what one Ship did.
type Shipped struct {
	RelPath string // the rollout's path under CODEX_HOME, slash-separated
	From    int64  // offset the new chunk(s) start at
	Bytes   int64  // bytes shipped now; 0 when nothing new
}

// FindRollout returns the path, relative to codexHome and slash-separated,
// of the rollout file of threadID:
// sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl.
func FindRollout(codexHome, threadID string) (string, error) {
	if err := checkThreadID(threadID); err != nil {
		return "", err
	}
	matches, err := rolloutFiles(codexHome, threadID)
	if err != nil {
		return "", fmt.Errorf("cluster: find rollout of %s: %w", threadID, err)
	}
	switch len(matches) {
	case 0:
		return "", fmt.Errorf("%w %s under %s", ErrNoRollout, threadID, codexHome)
	case 1:
		rel, err := filepath.Rel(codexHome, matches[0])
		if err != nil {
			return "", fmt.Errorf("cluster: find rollout of %s: %w", threadID, err)
		}
		return filepath.ToSlash(rel), nil
	default:
		return "", fmt.Errorf("cluster: thread %s has %d rollout files under %s, want one", threadID, len(matches), codexHome)
	}
}

// Ship appends to the database what the thread's rollout file under
// codexHome gained since the last ship, up to its last complete line (codex
// may be writing the next one). It runs under the lane's lease l, fenced:
// an ex-owner cannot ship. Shipping again with nothing new ships nothing.
func (r *Rollouts) Ship(ctx context.Context, codexHome, threadID string, l Lease) (Shipped, error) {
	rel, err := FindRollout(codexHome, threadID)
	if err != nil {
		return Shipped{}, err
	}
	f, err := os.Open(filepath.Join(codexHome, filepath.FromSlash(rel)))
	if err != nil {
		return Shipped{}, fmt.Errorf("cluster: ship %s: %w", threadID, err)
	}
	defer f.Close()

	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return Shipped{}, fmt.Errorf("cluster: ship %s: %w", threadID, err)
	}
	defer tx.Rollback() //nolint:errcheck // a no-op after Commit
	if err := Fence(ctx, tx, l); err != nil {
		return Shipped{}, fmt.Errorf("cluster: ship %s: %w", threadID, err)
	}
	shipped, err := shipTail(ctx, tx, f, threadID, rel)
	if err != nil {
		return Shipped{}, err
	}
	if err := tx.Commit(); err != nil {
		return Shipped{}, fmt.Errorf("cluster: ship %s: commit: %w", threadID, FenceError(err))
	}
	return shipped, nil
}

func shipTail(ctx context.Context, tx *sql.Tx, f *os.File, threadID, rel string) (Shipped, error) {
	// Two shippers of one thread (an owner and an ex-owner racing its
	// fence) take turns, so each sees the other's chunks.
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('rollout:' || $1))`, threadID); err != nil {
		return Shipped{}, fmt.Errorf("cluster: ship %s: lock: %w", threadID, err)
	}
	end, err := checkShippedPrefix(ctx, tx, f, threadID, rel)
	if err != nil {
		return Shipped{}, err
	}
	tail, err := completeLinesFrom(f, end)
	if err != nil {
		return Shipped{}, fmt.Errorf("cluster: ship %s: read: %w", threadID, err)
	}
	for off := 0; off < len(tail); off += maxChunk {
		chunk := tail[off:min(off+maxChunk, len(tail))]
		if _, err := tx.ExecContext(ctx, `INSERT INTO rollout_chunks (thread_id, rel_path, "offset", data)
			VALUES ($1, $2, $3, $4) ON CONFLICT (thread_id, "offset") DO NOTHING`,
			threadID, rel, end+int64(off), chunk); err != nil {
			return Shipped{}, fmt.Errorf("cluster: ship %s: insert: %w", threadID, err)
		}
	}
	return Shipped{RelPath: rel, From: end, Bytes: int64(len(tail))}, nil
}

// checkShippedPrefix returns where the shipped copy ends after checking
// that the file still starts with it, as far as its size and the last
// chunk's bytes tell.
func checkShippedPrefix(ctx context.Context, tx *sql.Tx, f *os.File, threadID, rel string) (int64, error) {
	var (
		lastRel string
		lastOff int64
		last    []byte
	)
	err := tx.QueryRowContext(ctx, `SELECT rel_path, "offset", data FROM rollout_chunks
		WHERE thread_id = $1 ORDER BY "offset" DESC LIMIT 1`, threadID).Scan(&lastRel, &lastOff, &last)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("cluster: ship %s: read shipped end: %w", threadID, err)
	}
	if lastRel != rel {
		return 0, fmt.Errorf("%w: %s moved from %s to %s", ErrRolloutRewritten, threadID, lastRel, rel)
	}
	end := lastOff + int64(len(last))
	info, err := f.Stat()
	if err != nil {
		return 0, fmt.Errorf("cluster: ship %s: %w", threadID, err)
	}
	if info.Size() < end {
		return 0, fmt.Errorf("%w: %s is %d bytes, %d were shipped", ErrRolloutRewritten, rel, info.Size(), end)
	}
	check := last[max(0, len(last)-tailCheck):]
	got := make([]byte, len(check))
	if _, err := f.ReadAt(got, end-int64(len(check))); err != nil {
		return 0, fmt.Errorf("cluster: ship %s: read: %w", threadID, err)
	}
	if !bytes.Equal(got, check) {
		return 0, fmt.Errorf("%w: %s no longer holds the bytes shipped before offset %d", ErrRolloutRewritten, rel, end)
	}
	return end, nil
}

// completeLinesFrom reads f from off up to and including its last newline.
func completeLinesFrom(f *os.File, off int64) ([]byte, error) {
	data, err := io.ReadAll(io.NewSectionReader(f, off, 1<<62))
	if err != nil {
		return nil, err
	}
	return data[:bytes.LastIndexByte(data, '\n')+1], nil
}

// Restored says what one Restore did.
type Restored struct {
	RelPath string // where it went under CODEX_HOME, slash-separated
	Bytes   int64  // size of the restored rollout
	Written bool   // false when the local copy was already identical
	// MovedAside are the local copies that differed from the shipped
	// rollout (a node that served the lane before, paused or cut off,
	// kept its own history), now under DivergedDir: absolute paths.
	MovedAside []string
	// Rebuilt are the committed turns the shipped rollout lacked, written
	// from the transcript; LocalTail is set when they came from this
	// node's own copy instead.
	Rebuilt   []string
	LocalTail bool
}

// Restore writes the thread's shipped rollout under codexHome at the path
// it had on the shipping node, where codex's thread/resume finds it, so
// the thread goes on from the last turn shipped (each is, after its
// commit). A local copy that is a prefix of the shipped one is brought
// up to date; one that is longer or differs (this node served the lane
// before and wrote turns the cluster never committed, or another node
// went on without them) is moved aside into DivergedDir, as is a copy at
// another path, and the shipped one put in its place. The file is
// replaced atomically (temp file, then rename). The thread must not be
// loaded in the app-server meanwhile: codex would go on writing to, or
// resume from, what it has in memory.
func (r *Rollouts) Restore(ctx context.Context, codexHome, threadID string) (Restored, error) {
	return r.RestoreCovering(ctx, codexHome, threadID, nil)
}

// RestoreCovering is Restore for a lane whose committed turns on the thread
// are committed (newest first): the restored rollout covers them. Those
// the shipped rollout lacks (its owner died between their commit and
// their ship) come from this node's own copy when it goes on from the
// shipped one through them, else are rebuilt from the transcript
// (Restored.Rebuilt).
func (r *Rollouts) RestoreCovering(ctx context.Context, codexHome, threadID string, committed []CommittedTurn) (Restored, error) {
	if err := checkThreadID(threadID); err != nil {
		return Restored{}, err
	}
	rel, data, err := r.load(ctx, threadID)
	if err != nil {
		return Restored{}, err
	}
	dst := filepath.Join(codexHome, filepath.FromSlash(rel))
	res := Restored{RelPath: rel}
	if res.MovedAside, err = moveStrayCopies(codexHome, threadID, dst); err != nil {
		return res, fmt.Errorf("cluster: restore %s: %w", threadID, err)
	}
	local, err := os.ReadFile(dst)
	haveLocal := err == nil
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return res, fmt.Errorf("cluster: restore %s: %w", threadID, err)
	}
	if data, err = cover(data, local, committed, &res); err != nil {
		return res, fmt.Errorf("cluster: restore %s: %w", threadID, err)
	}
	res.Bytes = int64(len(data))
	switch {
	case haveLocal && bytes.Equal(local, data):
		return res, nil
	case haveLocal && !bytes.HasPrefix(data, local):
		aside, err := moveAside(codexHome, dst)
		if err != nil {
			return res, fmt.Errorf("cluster: restore %s: local copy differs (%d bytes, %d shipped): %w", threadID, len(local), len(data), err)
		}
		res.MovedAside = append(res.MovedAside, aside)
	}
	if err := writeAtomically(dst, data); err != nil {
		return res, fmt.Errorf("cluster: restore %s: %w", threadID, err)
	}
	res.Written = true
	return res, nil
}

// rolloutFiles are the thread's rollout files under codexHome, where codex
// writes them: sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl.
func rolloutFiles(codexHome, threadID string) ([]string, error) {
	return filepath.Glob(filepath.Join(codexHome, "sessions", "*", "*", "*", "rollout-*-"+threadID+".jsonl"))
}

// moveStrayCopies moves aside the thread's rollout files under codexHome's
// sessions/ other than dst: codex would find two, and Ship refuses a
// thread with more than one.
func moveStrayCopies(codexHome, threadID, dst string) ([]string, error) {
	matches, err := rolloutFiles(codexHome, threadID)
	if err != nil {
		return nil, err
	}
	var moved []string
	for _, m := range matches {
		if m == dst {
			continue
		}
		aside, err := moveAside(codexHome, m)
		if err != nil {
			return moved, err
		}
		moved = append(moved, aside)
	}
	return moved, nil
}

// moveAside renames the rollout file path into codexHome's DivergedDir
// under its own name with the time it was moved, and returns where it is.
// A crash between this and the restored file's rename leaves no local
// copy: the next takeover restores it again.
func moveAside(codexHome, path string) (string, error) {
	dir := filepath.Join(codexHome, DivergedDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	name := strings.TrimSuffix(filepath.Base(path), ".jsonl") + "." + time.Now().UTC().Format("20060102T150405.000000000Z") + ".jsonl"
	aside := filepath.Join(dir, name)
	if err := os.Rename(path, aside); err != nil {
		return "", err
	}
	return aside, nil
}

// load reads the shipped chunks in order and checks they join up.
func (r *Rollouts) load(ctx context.Context, threadID string) (string, []byte, error) {
	rows, err := r.db.QueryContext(ctx, `SELECT rel_path, "offset", data FROM rollout_chunks
		WHERE thread_id = $1 ORDER BY "offset"`, threadID)
	if err != nil {
		return "", nil, fmt.Errorf("cluster: restore %s: %w", threadID, err)
	}
	defer rows.Close()
	var (
		rel  string
		data []byte
	)
	for rows.Next() {
		var (
			chunkRel string
			off      int64
			chunk    []byte
		)
		if err := rows.Scan(&chunkRel, &off, &chunk); err != nil {
			return "", nil, fmt.Errorf("cluster: restore %s: %w", threadID, err)
		}
		if rel == "" {
			rel = chunkRel
		}
		if chunkRel != rel || off != int64(len(data)) {
			return "", nil, fmt.Errorf("cluster: restore %s: shipped chunks do not join up at offset %d (%s)", threadID, off, chunkRel)
		}
		data = append(data, chunk...)
	}
	if err := rows.Err(); err != nil {
		return "", nil, fmt.Errorf("cluster: restore %s: %w", threadID, err)
	}
	if rel == "" {
		return "", nil, fmt.Errorf("%w %s in the database", ErrNoRollout, threadID)
	}
	if err := checkRelPath(rel, threadID); err != nil {
		return "", nil, err
	}
	return rel, data, nil
}

// checkRelPath keeps a restore inside CODEX_HOME's sessions directory
// whatever the database holds.
func checkRelPath(rel, threadID string) error {
	clean := path.Clean(rel)
	if clean != rel || !strings.HasPrefix(rel, "sessions/") || strings.Contains(rel, "..") ||
		!strings.HasSuffix(rel, "-"+threadID+".jsonl") {
		return fmt.Errorf("cluster: restore %s: refusing shipped path %q outside sessions/", threadID, rel)
	}
	return nil
}

func checkThreadID(id string) error {
	if id == "" || strings.ContainsAny(id, `/\*?[]`) || strings.Contains(id, "..") {
		return fmt.Errorf("cluster: invalid thread id %q", id)
	}
	return nil
}

// writeAtomically writes data to dst through a synced temp file in the same
// directory and a rename, so a crash leaves the old file or the new one,
// never half of one.
func writeAtomically(dst string, data []byte) error {
	dir := filepath.Dir(dst)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".restore-*.jsonl")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // fails harmlessly after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), dst); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
