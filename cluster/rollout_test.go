package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	testThread  = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	testRelPath = "sessions/2026/12/01/rollout-2026-12-01T10-00-00-" + testThread + ".jsonl"
)

// rolloutFixture is a database with the rollout table, a lane lease to ship
// under, and a CODEX_HOME holding a rollout file being written.
type rolloutFixture struct {
	t        testing.TB
	rollouts *Rollouts
	node     *Node
	lease    Lease
	home     string
}

func newRolloutFixture(t testing.TB) *rolloutFixture {
	t.Helper()
	dsn := newDatabase(t)
	n := newNode(t, dsn, "node-a")
	return &rolloutFixture{
		t:        t,
		rollouts: NewRollouts(n.db),
		node:     n,
		lease:    mustAcquire(t, n, "lane", time.Minute),
		home:     t.TempDir(),
	}
}

func (f *rolloutFixture) path() string {
	return filepath.Join(f.home, filepath.FromSlash(testRelPath))
}

func (f *rolloutFixture) appendLines(s string) {
	f.t.Helper()
	if err := os.MkdirAll(filepath.Dir(f.path()), 0o700); err != nil {
		f.t.Fatal(err)
	}
	file, err := os.OpenFile(f.path(), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		f.t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.WriteString(s); err != nil {
		f.t.Fatal(err)
	}
}

func (f *rolloutFixture) ship() Shipped {
	f.t.Helper()
	s, err := f.rollouts.Ship(testContext(f.t), f.home, testThread, f.lease)
	if err != nil {
		f.t.Fatalf("Ship: %v", err)
	}
	return s
}

func TestShipSendsOnlyNewCompleteLinesAndIsIdempotent(t *testing.T) {
	f := newRolloutFixture(t)
	f.appendLines(`{"turn":1}` + "\n")
	if got := f.ship(); got.RelPath != testRelPath || got.From != 0 || got.Bytes != 11 {
		t.Fatalf("first Ship = %+v, want 11 bytes of %s from 0", got, testRelPath)
	}
	if got := f.ship(); got.Bytes != 0 || got.From != 11 {
		t.Errorf("Ship with nothing new = %+v, want 0 bytes from 11", got)
	}
	f.appendLines(`{"turn":2}` + "\n" + `{"half-writ`)
	if got := f.ship(); got.Bytes != 11 {
		t.Errorf("Ship with a half-written line = %+v, want only the 11 bytes of the complete line", got)
	}
	f.appendLines(`ten":true}` + "\n")
	if got := f.ship(); got.From != 22 || got.Bytes != 22 {
		t.Errorf("Ship once the line is complete = %+v, want 22 bytes from 22", got)
	}
	var chunks int
	if err := f.node.db.QueryRow(`SELECT count(*) FROM rollout_chunks WHERE thread_id = $1`, testThread).Scan(&chunks); err != nil {
		t.Fatal(err)
	}
	if chunks != 3 {
		t.Errorf("%d chunks stored, want 3 (empty ships store none)", chunks)
	}
}

func TestShipRefusesAShrunkOrRewrittenFile(t *testing.T) {
	for _, tc := range []struct {
		name    string
		rewrite string
	}{
		{"shrunk", `{"turn":1}` + "\n"},
		{"same size, other bytes", `{"turn":1}` + "\n" + `{"turn":X}` + "\n"},
		{"longer, other bytes", `{"turn":1}` + "\n" + `{"turn":X}` + "\n" + `{"turn":3}` + "\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newRolloutFixture(t)
			f.appendLines(`{"turn":1}` + "\n" + `{"turn":2}` + "\n")
			f.ship()
			if err := os.WriteFile(f.path(), []byte(tc.rewrite), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := f.rollouts.Ship(testContext(t), f.home, testThread, f.lease)
			if !errors.Is(err, ErrRolloutRewritten) {
				t.Errorf("Ship of a rewritten file: err = %v, want ErrRolloutRewritten", err)
			}
		})
	}
}

func TestShipByAnExOwnerIsFenced(t *testing.T) {
	f := newRolloutFixture(t)
	f.appendLines(`{"turn":1}` + "\n")
	if err := f.node.Release(testContext(t), f.lease); err != nil {
		t.Fatal(err)
	}
	_, err := f.rollouts.Ship(testContext(t), f.home, testThread, f.lease)
	if !errors.Is(err, ErrFenced) {
		t.Errorf("Ship after losing the lease: err = %v, want ErrFenced", err)
	}
}

func TestRestoreRebuildsTheFileAndReplacesADifferingLocalCopy(t *testing.T) {
	f := newRolloutFixture(t)
	ctx := testContext(t)
	f.appendLines(`{"turn":1}` + "\n")
	f.ship()
	f.appendLines(`{"turn":2}` + "\n")
	f.ship()
	want, _ := os.ReadFile(f.path())

	other := t.TempDir()
	dst := filepath.Join(other, filepath.FromSlash(testRelPath))
	got, err := f.rollouts.Restore(ctx, other, testThread)
	if err != nil || !got.Written || got.RelPath != testRelPath || got.Bytes != int64(len(want)) || len(got.MovedAside) != 0 {
		t.Fatalf("Restore into an empty home = %+v, %v; want %d bytes written at %s, nothing moved aside", got, err, len(want), testRelPath)
	}
	assertFile(t, dst, want)
	if got, err := f.rollouts.Restore(ctx, other, testThread); err != nil || got.Written || len(got.MovedAside) != 0 {
		t.Errorf("Restore over an identical copy = %+v, %v; want nothing written or moved", got, err)
	}

	cases := []struct {
		name  string
		local string
		aside bool // the local copy differs: kept under DivergedDir
	}{
		{"older prefix is brought up to date", `{"turn":1}` + "\n", false},
		{"longer copy is moved aside", string(want) + `{"turn":3}` + "\n", true},
		{"different copy is moved aside", `{"turn":9}` + "\n" + `{"turn":2}` + "\n", true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(dst, []byte(tc.local), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := f.rollouts.Restore(ctx, other, testThread)
			if err != nil || !got.Written {
				t.Fatalf("Restore = %+v, %v; want the shipped copy written", got, err)
			}
			assertFile(t, dst, want)
			if !tc.aside {
				if len(got.MovedAside) != 0 {
					t.Errorf("moved aside %v, want nothing: the local copy was a prefix", got.MovedAside)
				}
				return
			}
			if len(got.MovedAside) != 1 {
				t.Fatalf("moved aside %v, want the local copy", got.MovedAside)
			}
			aside := got.MovedAside[0]
			if filepath.Dir(aside) != filepath.Join(other, DivergedDir) || !strings.Contains(filepath.Base(aside), testThread) {
				t.Errorf("local copy moved to %s, want a file naming the thread in %s", aside, filepath.Join(other, DivergedDir))
			}
			assertFile(t, aside, []byte(tc.local))
			if rel, err := FindRollout(other, testThread); err != nil || rel != testRelPath {
				t.Errorf("FindRollout after the restore = %q, %v; want the restored copy only", rel, err)
			}
		})
	}
	if leftovers, _ := filepath.Glob(filepath.Join(filepath.Dir(dst), ".restore-*")); len(leftovers) != 0 {
		t.Errorf("temp files left behind: %v", leftovers)
	}
}

// A node that served the lane before, paused past its lease while another
// node went on, finds its own longer history where the shipped one goes:
// restored over it, the thread's file is the shipped copy again, so the
// next owner's ships are accepted (before, every later ship was refused as
// a rewrite and the two histories stayed split).
func TestShipAfterARestoreOverADivergedCopyIsAccepted(t *testing.T) {
	f := newRolloutFixture(t)
	ctx := testContext(t)
	f.appendLines(`{"turn":1}` + "\n")
	f.ship()
	paused := t.TempDir() // the paused node's home: turn 1, then a cut-off turn
	if _, err := f.rollouts.Restore(ctx, paused, testThread); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(paused, filepath.FromSlash(testRelPath))
	appendTo(t, local, `{"cut-off":true}`+"\n")
	f.appendLines(`{"turn":2}` + "\n") // the other node's turn, shipped
	f.ship()

	if err := f.node.Release(ctx, f.lease); err != nil {
		t.Fatal(err)
	}
	back := mustAcquire(t, f.node, "lane", time.Minute)
	got, err := f.rollouts.Restore(ctx, paused, testThread)
	if err != nil || len(got.MovedAside) != 1 {
		t.Fatalf("Restore over the paused node's copy = %+v, %v; want its copy moved aside", got, err)
	}
	appendTo(t, local, `{"turn":3}`+"\n") // the next turn, on the node it came back to
	shipped, err := f.rollouts.Ship(ctx, paused, testThread, back)
	if err != nil || shipped.Bytes != int64(len(`{"turn":3}`+"\n")) {
		t.Fatalf("Ship after the restore = %+v, %v; want the new turn shipped", shipped, err)
	}
	other := t.TempDir()
	if _, err := f.rollouts.Restore(ctx, other, testThread); err != nil {
		t.Fatal(err)
	}
	assertFile(t, filepath.Join(other, filepath.FromSlash(testRelPath)), []byte(`{"turn":1}`+"\n"+`{"turn":2}`+"\n"+`{"turn":3}`+"\n"))
}

// A second rollout of the thread at another path (another day's
// directory) is moved aside too: codex and Ship would find two.
func TestRestoreMovesAStrayCopyAside(t *testing.T) {
	f := newRolloutFixture(t)
	ctx := testContext(t)
	f.appendLines(`{"turn":1}` + "\n")
	f.ship()
	home := t.TempDir()
	stray := filepath.Join(home, "sessions", "2026", "11", "30", "rollout-2026-11-30T09-00-00-"+testThread+".jsonl")
	appendTo(t, stray, `{"stray":true}`+"\n")
	got, err := f.rollouts.Restore(ctx, home, testThread)
	if err != nil || !got.Written || len(got.MovedAside) != 1 {
		t.Fatalf("Restore = %+v, %v; want the shipped copy written and the stray one moved aside", got, err)
	}
	assertFile(t, got.MovedAside[0], []byte(`{"stray":true}`+"\n"))
	if rel, err := FindRollout(home, testThread); err != nil || rel != testRelPath {
		t.Errorf("FindRollout after the restore = %q, %v; want %s alone", rel, err, testRelPath)
	}
}

func appendTo(t *testing.T, path, s string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	file, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	if _, err := file.WriteString(s); err != nil {
		t.Fatal(err)
	}
}

func TestRestoreRefusesPathsOutsideSessions(t *testing.T) {
	f := newRolloutFixture(t)
	for _, rel := range []string{"../../etc/evil-" + testThread + ".jsonl", "sessions/../../x-" + testThread + ".jsonl", "/abs/rollout-" + testThread + ".jsonl"} {
		t.Run(rel, func(t *testing.T) {
			mustExec(t, f.node.db, `DELETE FROM rollout_chunks`)
			mustExec(t, f.node.db, `INSERT INTO rollout_chunks VALUES ($1, $2, 0, 'x')`, testThread, rel)
			if _, err := f.rollouts.Restore(testContext(t), t.TempDir(), testThread); err == nil {
				t.Errorf("Restore of a chunk at %q succeeded, want it refused", rel)
			}
		})
	}
}

func TestRestoreOfAnUnknownThread(t *testing.T) {
	f := newRolloutFixture(t)
	if _, err := f.rollouts.Restore(testContext(t), t.TempDir(), testThread); !errors.Is(err, ErrNoRollout) {
		t.Errorf("Restore of a thread never shipped: err = %v, want ErrNoRollout", err)
	}
}

func TestFindRollout(t *testing.T) {
	f := newRolloutFixture(t)
	if _, err := FindRollout(f.home, testThread); !errors.Is(err, ErrNoRollout) {
		t.Errorf("FindRollout with no file: err = %v, want ErrNoRollout", err)
	}
	f.appendLines("{}\n")
	if got, err := FindRollout(f.home, testThread); err != nil || got != testRelPath {
		t.Errorf("FindRollout = %q, %v; want %q", got, err, testRelPath)
	}
	for _, bad := range []string{"", "*", "../x", "a/b"} {
		if _, err := FindRollout(f.home, bad); err == nil || errors.Is(err, ErrNoRollout) {
			t.Errorf("FindRollout(%q): err = %v, want an invalid-id error", bad, err)
		}
	}
}

func assertFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s = %q, want %q", path, got, want)
	}
}

// Two shippers of one thread at once (an owner's retry racing its first
// attempt) store every byte once, in chunks that join up.
func TestConcurrentShipsStoreEachByteOnce(t *testing.T) {
	f := newRolloutFixture(t)
	ctx := testContext(t)
	for turn := range 5 {
		f.appendLines(fmt.Sprintf(`{"turn":%d}`+"\n", turn))
		var wg sync.WaitGroup
		errs := make([]error, 3)
		for i := range errs {
			wg.Go(func() { _, errs[i] = f.rollouts.Ship(ctx, f.home, testThread, f.lease) })
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatalf("concurrent Ship: %v", err)
			}
		}
	}
	want, _ := os.ReadFile(f.path())
	other := t.TempDir()
	if _, err := f.rollouts.Restore(ctx, other, testThread); err != nil {
		t.Fatalf("Restore after concurrent ships: %v", err)
	}
	assertFile(t, filepath.Join(other, filepath.FromSlash(testRelPath)), want)
	var stored int
	if err := f.node.db.QueryRowContext(ctx, `SELECT sum(length(data)) FROM rollout_chunks`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if stored != len(want) {
		t.Errorf("%d bytes stored for a %d-byte rollout", stored, len(want))
	}
}
