package worktree

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// poolLane places a lane as the gateway does, <root>/<lane>/<project dir
// name>, so the pool finds the project's entries by the lane's Dir.
func poolLane(t testing.TB, project, slug string) Lane {
	return Lane{Project: project, Dir: filepath.Join(worktreesOf(project), slug, "project"), Slug: slug}
}

func worktreesOf(project string) string { return filepath.Join(filepath.Dir(project), "worktrees") }

func poolOf(project string, size int) *Pool { return NewPool(worktreesOf(project), size) }

func fill(t testing.TB, p *Pool, project string) {
	t.Helper()
	if err := p.Fill(context.Background(), project, "project"); err != nil {
		t.Fatalf("Fill: %v", err)
	}
}

// entries are the pool's ready entries of the test project.
func entries(t testing.TB, p *Pool) []string {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ready("project")
}

// pooled is a lane's worktree taken from a pool of one entry.
func pooled(t *testing.T, project, slug string) Ensured {
	t.Helper()
	p := poolOf(project, 1)
	fill(t, p, project)
	e, err := p.Ensure(context.Background(), poolLane(t, project, slug))
	if err != nil {
		t.Fatalf("Ensure from the pool: %v", err)
	}
	if !e.Pooled || e.Made != Created {
		t.Fatalf("Ensure from a full pool: Pooled %v Made %v; want a created worktree from the pool", e.Pooled, e.Made)
	}
	return e
}

// A worktree from the pool is the same as one checked out: its branch,
// base, files, /undo and /diff.
func TestAPooledWorktreeRestoresAsACreatedOne(t *testing.T) { checkRestore(t, pooled) }

func TestAPooledWorktreeDiffsAsACreatedOne(t *testing.T) { checkDiff(t, pooled) }

func TestAPooledWorktreeIsTheLanesOwn(t *testing.T) {
	project := newRepo(t, map[string]string{"README": "hello\n"})
	e := pooled(t, project, "lane")
	if got := run(t, e.Work, "branch", "--show-current"); got != "gatewayd/lane" {
		t.Errorf("branch = %q", got)
	}
	head := run(t, project, "rev-parse", "HEAD")
	if e.Base != head || run(t, project, "rev-parse", "refs/heads/gatewayd/lane") != head {
		t.Errorf("base %s, project's branch for the lane %s; want both the project's HEAD %s", e.Base,
			run(t, project, "rev-parse", "refs/heads/gatewayd/lane"), head)
	}
	if got := run(t, e.Work, "status", "--porcelain"); got != "" {
		t.Errorf("status of a fresh pooled worktree = %q", got)
	}
	if again := ensure(t, e.Lane); again.Made != Existing || again.Base != e.Base {
		t.Errorf("second Ensure: %v base %s", again.Made, again.Base)
	}
}

// Dirty and Detached are the checkout's at take time, not when the entry
// was made.
func TestAPooledWorktreeReportsTheCheckoutAtTakeTime(t *testing.T) {
	project := newRepo(t, map[string]string{"a.txt": "one\n"})
	p := poolOf(project, 1)
	fill(t, p, project)
	write(t, filepath.Join(project, "a.txt"), "uncommitted\n")
	e, err := p.Ensure(context.Background(), poolLane(t, project, "dirty"))
	if err != nil || !e.Pooled || !e.Dirty || e.Detached {
		t.Errorf("Ensure = Pooled %v Dirty %v Detached %v, %v; want pooled, dirty, not detached", e.Pooled, e.Dirty, e.Detached, err)
	}
}

// Many lanes at once on a pool of fewer entries: each entry goes to one
// lane, the others check out their own, and every lane has its files.
func TestThePoolNeverHandsOneWorktreeToTwoLanes(t *testing.T) {
	project := newRepo(t, map[string]string{"a.txt": "a\n"})
	p := poolOf(project, 3)
	fill(t, p, project)
	const lanes = 8
	results := make([]Ensured, lanes)
	errs := make([]error, lanes)
	var wg sync.WaitGroup
	for i := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = p.Ensure(context.Background(), poolLane(t, project, "lane-"+string(rune('a'+i))))
		}()
	}
	wg.Wait()
	taken := 0
	for i, e := range results {
		if errs[i] != nil {
			t.Fatalf("lane %d: %v", i, errs[i])
		}
		if e.Pooled {
			taken++
		}
		if got := read(t, filepath.Join(e.Work, "a.txt")); got != "a\n" {
			t.Errorf("lane %d's a.txt = %q", i, got)
		}
		if got := run(t, e.Work, "branch", "--show-current"); got != e.Branch() {
			t.Errorf("lane %d is on %q, want %q", i, got, e.Branch())
		}
	}
	if taken != 3 || len(entries(t, p)) != 0 {
		t.Errorf("%d lanes took from a pool of 3, %d left", taken, len(entries(t, p)))
	}
}

// An entry made before the project's HEAD moved is not handed out: the
// lane starts from the new HEAD, and the next Fill replaces the entry.
func TestAnEntryOfAnOldHeadIsNotHandedOut(t *testing.T) {
	project := newRepo(t, map[string]string{"a.txt": "old\n"})
	p := poolOf(project, 1)
	fill(t, p, project)
	write(t, filepath.Join(project, "a.txt"), "new\n")
	run(t, project, "commit", "-q", "-am", "moved on")
	e, err := p.Ensure(context.Background(), poolLane(t, project, "lane"))
	if err != nil {
		t.Fatal(err)
	}
	if e.Pooled {
		t.Error("the lane got the entry of the old HEAD")
	}
	if got := read(t, filepath.Join(e.Work, "a.txt")); got != "new\n" {
		t.Errorf("the lane's a.txt = %q; want the project's HEAD's", got)
	}
	fill(t, p, project)
	got := entries(t, p)
	if head := run(t, project, "rev-parse", "HEAD"); len(got) != 1 || entryCommit(got[0]) != head {
		t.Errorf("after Fill the pool holds %v; want one entry at %s", got, head)
	}
	if again, _ := p.Ensure(context.Background(), poolLane(t, project, "next")); !again.Pooled {
		t.Error("the refreshed entry was not taken")
	}
}

// A new Pool over the same directory (a restart) reuses a valid entry,
// and discards one whose repository was written by someone else, one of
// an old HEAD and one half made.
func TestThePoolSurvivesARestart(t *testing.T) {
	project := newRepo(t, map[string]string{"a.txt": "a\n"})
	fill(t, poolOf(project, 2), project)
	before := entries(t, poolOf(project, 2))
	if len(before) != 2 {
		t.Fatalf("%d entries; want 2", len(before))
	}
	write(t, filepath.Join(before[1], ".git", "config"), laneConfig+"[core]\n\tfsmonitor = /tmp/planted\n")
	halfMade := filepath.Join(worktreesOf(project), PoolDir, "project", ".tmp-crashed")
	write(t, filepath.Join(halfMade, "a.txt"), "a\n")

	restarted := poolOf(project, 2)
	fill(t, restarted, project)
	after := entries(t, restarted)
	if len(after) != 2 || !slices.Contains(after, before[0]) || slices.Contains(after, before[1]) {
		t.Errorf("after a restart: %v; want %s kept, the tampered %s replaced", after, before[0], before[1])
	}
	if exists(halfMade) {
		t.Error("the half-made entry is still there")
	}

	write(t, filepath.Join(project, "a.txt"), "b\n")
	run(t, project, "commit", "-q", "-am", "moved on")
	again := poolOf(project, 2)
	fill(t, again, project)
	for _, e := range entries(t, again) {
		if slices.Contains(after, e) {
			t.Errorf("entry %s of the old HEAD kept", e)
		}
	}
}

// /fork from the pool gives what Fork without one gives (fork_test.go).
func TestForkFromThePool(t *testing.T) {
	checkFork(t, poolLane, func(project string) *Pool { return poolOf(project, 1) })
}

// Pruning the lanes' worktrees never lists the pool.
func TestListSkipsThePool(t *testing.T) {
	project := newRepo(t, map[string]string{"a.txt": "a\n"})
	p := poolOf(project, 1)
	fill(t, p, project)
	found, err := List(worktreesOf(project))
	if err != nil || len(found) != 0 {
		t.Errorf("List = %+v, %v; want nothing but the pool there", found, err)
	}
	if _, err := os.Stat(filepath.Join(worktreesOf(project), PoolDir)); err != nil {
		t.Error(err)
	}
}

// Run fills the pool at once, refills it after a take, drops the entries
// of a project no longer configured, and ends with its context.
func TestRunKeepsThePoolFull(t *testing.T) {
	project := newRepo(t, map[string]string{"a.txt": "a\n"})
	p := poolOf(project, 1)
	rounds := make(chan struct{}, 1)
	p.rounds = rounds
	stray := filepath.Join(worktreesOf(project), PoolDir, "unconfigured", "entry")
	write(t, filepath.Join(stray, "a.txt"), "a\n")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx, map[string]string{"project": project}, time.Hour, func(_ string, err error) { t.Errorf("fill failed: %v", err) })
	}()
	<-rounds
	if n := p.Count("project"); n != 1 || exists(stray) {
		t.Errorf("after the first round: %d entries, unconfigured project's left: %v", n, exists(stray))
	}
	if e, err := p.Ensure(ctx, poolLane(t, project, "lane")); err != nil || !e.Pooled {
		t.Fatalf("Ensure: pooled %v, %v", e.Pooled, err)
	}
	<-rounds // the take asked for a fill
	if n := p.Count("project"); n != 1 {
		t.Errorf("after a take and a round: %d entries; want 1", n)
	}
	cancel()
	<-done
}
