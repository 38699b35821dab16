package worktree

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// A Pool keeps ready worktrees of each project (worktrees.pool): checking out a project of 100,000 files takes
// seconds, and a new lane's first message or a /fork should not wait for
// it. An entry is a lane repository like any other (its own .git, the
// project's objects borrowed through alternates) with HEAD detached at
// the project's HEAD and every file checked out, in
// <root>/.pool/<project dir name>/<random>. Taking one is a rename into
// the lane's place, on the same filesystem, after which only refs are
// written; an entry is made under a ".tmp-" name and renamed when
// complete, so a crash leaves nothing half made that could be taken.
//
// An entry whose commit is no longer the project's HEAD is never handed
// out (a lane starts from the project's HEAD, as without a pool): it is
// discarded and made again in the background.
type Pool struct {
	root string // <worktrees root>/.pool
	size int

	// mu is held while entries are chosen, renamed into a lane's place,
	// published or discarded: two lanes never get one entry. It is never
	// held during a checkout.
	mu sync.Mutex
	// fillMu lets one Fill run at a time, so an entry under its ".tmp-"
	// name is always one this Fill is making or one a crash left.
	fillMu sync.Mutex
	kick   chan struct{}
	// rounds, when set (tests), hears of each of Run's rounds done.
	rounds chan<- struct{}
}

// PoolDir is the pool's directory under the worktrees' root; it is no
// lane's (List skips it).
const PoolDir = ".pool"

// NewPool keeps size ready worktrees of each project under root/.pool,
// root being the lanes' worktrees root; nil (no pool) when size is 0.
func NewPool(root string, size int) *Pool {
	if size <= 0 {
		return nil
	}
	return &Pool{root: filepath.Join(root, PoolDir), size: size, kick: make(chan struct{}, 1)}
}

// dirOf is where the pool keeps entries for a project: by its dir name,
// as a lane's Dir is <root>/<lane>/<project dir name>.
func (p *Pool) dirOf(projectDir string) string { return filepath.Join(p.root, projectDir) }

// Count is how many entries for the project (its dir name) are ready
// now, whatever their commit.
func (p *Pool) Count(projectDir string) int {
	if p == nil {
		return 0
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.ready(projectDir))
}

// ready lists the published entries' directories. The caller holds mu.
func (p *Pool) ready(projectDir string) []string {
	entries, err := os.ReadDir(p.dirOf(projectDir))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			out = append(out, filepath.Join(p.dirOf(projectDir), e.Name()))
		}
	}
	return out
}

// entryCommit is the commit an entry was checked out at: its detached
// HEAD, read as a file (no git: this is the cheap check at take time).
func entryCommit(dir string) string {
	head := filepath.Join(dir, ".git", "HEAD")
	if fi, err := os.Lstat(head); err != nil || !fi.Mode().IsRegular() {
		return ""
	}
	data, err := os.ReadFile(head)
	if err != nil {
		return ""
	}
	id := strings.TrimSpace(string(data))
	if _, err := hex.DecodeString(id); err != nil || (len(id) != 40 && len(id) != 64) {
		return ""
	}
	return id
}

// take moves an entry checked out at head into dst, the lane's Dir
// (absent), and reports whether there was one. Another taker, in this
// process or another, cannot get the same entry: the choice is made
// under mu, and a rename succeeds only once.
func (p *Pool) take(projectDir, head, dst string) (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, src := range p.ready(projectDir) {
		if entryCommit(src) != head {
			p.Kick() // made before the project moved: Fill replaces it
			continue
		}
		if err := os.MkdirAll(filepath.Dir(dst), 0o700); err != nil {
			return false, fmt.Errorf("worktree: %w", err)
		}
		if err := os.Rename(src, dst); err != nil {
			return false, fmt.Errorf("worktree: taking a ready worktree: %w", err)
		}
		p.Kick()
		return true, nil
	}
	return false, nil
}

// takeInto puts a ready worktree of r's HEAD at l.Dir and returns its
// repository, repaired, to write the lane's refs in; ok is false when
// the pool had none (or there is no pool). start is the project's HEAD
// the entry was checked out at. The caller holds createMu and has
// cleared l.Dir.
func (p *Pool) takeInto(ctx context.Context, r repo, l Lane) (d repoDirs, start string, ok bool, err error) {
	if p == nil {
		return repoDirs{}, "", false, nil
	}
	head, err := r.bare().git(ctx, nil, "rev-parse", "HEAD^{commit}")
	if err != nil {
		return repoDirs{}, "", false, err
	}
	if ok, err := p.take(filepath.Base(l.Dir), head, l.Dir); !ok || err != nil {
		return repoDirs{}, "", false, err
	}
	if _, err := repair(l.gitDir(), r.objects(), r.format); err != nil {
		_ = os.RemoveAll(l.Dir) // not the lane's yet: nothing of its own is lost
		return repoDirs{}, "", false, err
	}
	return repoDirs{gitDir: l.gitDir(), workTree: l.Dir}, head, true, nil
}

// Kick asks Run to fill the pool now (after a take, or when a lane chose
// a project).
func (p *Pool) Kick() {
	if p == nil {
		return
	}
	select {
	case p.kick <- struct{}{}:
	default: // a fill is already asked for
	}
}

// Run keeps the pool of each project (dir name → directory) full until
// ctx ends: at once, when kicked, and every interval (the project's HEAD
// may have moved). failed hears of a project whose entries could not be
// made, once until that changes; a project that is not a git repository
// is skipped silently.
func (p *Pool) Run(ctx context.Context, projects map[string]string, every time.Duration, failed func(projectDir string, err error)) {
	if p == nil {
		return
	}
	p.forget(projects)
	tick := time.NewTicker(every)
	defer tick.Stop()
	last := make(map[string]string)
	for {
		for name, dir := range projects {
			err := p.Fill(ctx, dir, name)
			if ctx.Err() != nil {
				return
			}
			p.report(name, err, last, failed)
		}
		if p.rounds != nil {
			select {
			case p.rounds <- struct{}{}:
			case <-ctx.Done():
				return
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-tick.C:
		}
	}
}

// forget removes the entries of projects no longer configured. No lane
// can take them (its project is one of projects), so mu is not held
// through what may be a long removal.
func (p *Pool) forget(projects map[string]string) {
	dirs, _ := os.ReadDir(p.root)
	for _, d := range dirs {
		if _, ok := projects[d.Name()]; !ok {
			_ = os.RemoveAll(filepath.Join(p.root, d.Name()))
		}
	}
}

// report passes a new failure to failed; the same one again is not
// repeated every interval.
func (p *Pool) report(name string, err error, last map[string]string, failed func(string, error)) {
	msg := ""
	if err != nil && !errors.Is(err, ErrNotRepo) {
		msg = err.Error()
	}
	if msg != "" && msg != last[name] && failed != nil {
		failed(name, err)
	}
	last[name] = msg
}

// Fill discards the project's entries that are no longer usable (made
// from another commit than the project's HEAD, not a lane repository as
// the daemon writes it, or left half made) and makes new ones until
// there are size. Entries found on disk after a restart are reused when
// they pass. The checkouts run at low priority and without createMu, so
// lanes' own creation is never blocked behind the pool.
func (p *Pool) Fill(ctx context.Context, project, projectDir string) error {
	if p == nil {
		return nil
	}
	p.fillMu.Lock()
	defer p.fillMu.Unlock()
	r, err := openRepo(ctx, project)
	if err != nil {
		return err
	}
	head, err := r.bare().git(ctx, nil, "rev-parse", "HEAD^{commit}")
	if err != nil {
		return err
	}
	for n := p.sweep(r, projectDir, head); n < p.size; n++ {
		if err := p.make(ctx, r, projectDir, head); err != nil {
			return err
		}
	}
	return nil
}

// sweep removes what cannot be handed out and returns how many entries
// can. Entries are moved aside under mu (a taker then cannot find them)
// and deleted after.
func (p *Pool) sweep(r repo, projectDir, head string) (usable int) {
	var gone []string
	p.mu.Lock()
	entries, _ := os.ReadDir(p.dirOf(projectDir))
	for _, e := range entries {
		dir := filepath.Join(p.dirOf(projectDir), e.Name())
		if !strings.HasPrefix(e.Name(), ".") && e.IsDir() && p.usable(r, dir, head) {
			usable++
			continue
		}
		aside := filepath.Join(p.dirOf(projectDir), ".del-"+randomName())
		if strings.HasPrefix(e.Name(), ".del-") || os.Rename(dir, aside) != nil {
			aside = dir
		}
		gone = append(gone, aside)
	}
	p.mu.Unlock()
	for _, dir := range gone {
		_ = os.RemoveAll(dir)
	}
	return usable
}

// usable says an entry can be handed out: checked out at head, and its
// repository exactly as the daemon writes one (repair has nothing to put
// back: anything it would is a sign someone else wrote there).
func (p *Pool) usable(r repo, dir, head string) bool {
	if entryCommit(dir) != head || laneRepoState(Lane{Dir: dir}) != laneRepoOwn {
		return false
	}
	changed, err := repair(filepath.Join(dir, ".git"), r.objects(), r.format)
	return err == nil && len(changed) == 0
}

// make checks out a new entry at head under a temporary name and
// publishes it by renaming it once complete.
func (p *Pool) make(ctx context.Context, r repo, projectDir, head string) error {
	name := randomName()
	tmp := filepath.Join(p.dirOf(projectDir), ".tmp-"+name)
	if err := p.checkout(ctx, r, tmp, head); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	p.mu.Lock()
	err := os.Rename(tmp, filepath.Join(p.dirOf(projectDir), name))
	p.mu.Unlock()
	if err != nil {
		_ = os.RemoveAll(tmp)
		return fmt.Errorf("worktree: %w", err)
	}
	return nil
}

// checkout makes dir a lane repository with HEAD detached at head and
// head's files checked out (its index too, so taking it costs no
// checkout and forking from it only the files that differ).
func (p *Pool) checkout(ctx context.Context, r repo, dir, head string) error {
	d, err := r.initLaneRepo(ctx, Lane{Dir: dir})
	if err != nil {
		return err
	}
	d = d.long()
	d.nice = true
	if _, err := d.git(ctx, nil, "update-ref", "--no-deref", "HEAD", head); err != nil {
		return err
	}
	_, err = d.git(ctx, nil, "read-tree", "--reset", "-u", head)
	return err
}

func randomName() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
