package gateway

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/feature/projects"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// isolatedLanes configures lane isolation over temporary directories.
type isolatedLanes struct {
	work, tmp, files string
	st               *fakeStore // the harness's, which /project stores in
}

func (d isolatedLanes) opt(c *Config) {
	c.Thread.Cwd = d.work
	c.Isolation = Isolation{Profile: codex.LaneProfile, TempRoot: d.tmp}
	c.Files = files.New(d.files, files.Limits{}, nil)
	c.Features = append(c.Features, projects.New(projects.Settings{Projects: map[string]string{"api": "/srv/src/api"}}, d.st))
}

// confinement the gateway sent with the n-th thread and turn, and the
// n-th thread's working directory.
func (c *fakeCodex) confinement(n int) (thread, turn codex.Confinement, cwd string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.configs[n].Confine, c.confines[n], c.configs[n].Cwd
}

// With isolation on, each lane's thread and turns name the lane profile
// and the lane's own roots (its working directory first, its files and its
// temporary directory), which exist before the thread loads; two lanes
// without a project work in different directories; a project lane works
// in its project.
func TestIsolatedLanesAreConfinedToTheirOwnDirectories(t *testing.T) {
	d := isolatedLanes{work: t.TempDir(), tmp: t.TempDir(), files: t.TempDir(), st: newFakeStore()}
	h := newHarnessOn(t, d.st, d.opt)
	h.start(t)
	h.ask(t, "m1", "hello") // lane a
	h.send(t, "b", "m2", "hello")
	h.p.replyTo(t, "m2")

	var works []string
	for n, lane := range []string{"a", "b"} {
		key := apiAddr(lane).SessionKey()
		work, tmp, own := files.WorkDir(d.work, key), filepath.Join(d.tmp, files.DirName(key)), h.g.cfg.Files.LaneDir(key)
		thread, turn, cwd := h.cx.confinement(n)
		want := codex.Confinement{Profile: codex.LaneProfile, Roots: []string{work, own, tmp},
			Env: map[string]string{"TMPDIR": tmp, "HOME": tmp}}
		for what, got := range map[string]codex.Confinement{"thread": thread, "turn": turn} {
			if got.Profile != want.Profile || !slices.Equal(got.Roots, want.Roots) || got.Env["TMPDIR"] != tmp || got.Env["HOME"] != tmp {
				t.Errorf("lane %s's %s confinement %+v, want %+v", lane, what, got, want)
			}
		}
		if cwd != work {
			t.Errorf("lane %s's thread works in %s, want its own %s", lane, cwd, work)
		}
		for _, dir := range want.Roots {
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
				t.Errorf("lane %s's root %s: %v, %v (want a 0700 directory)", lane, dir, fi, err)
			}
		}
		works = append(works, work)
	}
	if works[0] == works[1] {
		t.Errorf("two project-less lanes share %s", works[0])
	}

	h.ask(t, "m3", "/project api")
	h.ask(t, "m4", "in the project")
	h.cx.mu.Lock()
	turn := h.cx.confines[len(h.cx.confines)-1]
	h.cx.mu.Unlock()
	if len(turn.Roots) == 0 || turn.Roots[0] != "/srv/src/api" {
		t.Errorf("a project lane's turn roots %v, want its project first", turn.Roots)
	}
}

// Without isolation the lanes share codex.cwd and nothing is confined, as
// before codex.isolation existed.
func TestUnisolatedLanesShareTheDefaultDirectory(t *testing.T) {
	work := t.TempDir()
	h := newHarness(t, func(c *Config) { c.Thread.Cwd = work })
	h.start(t)
	h.ask(t, "m1", "hello")
	h.send(t, "b", "m2", "hello")
	h.p.replyTo(t, "m2")
	for n := range 2 {
		thread, turn, cwd := h.cx.confinement(n)
		if thread.Profile != "" || turn.Profile != "" || cwd != work {
			t.Errorf("thread %d: confined %+v / %+v in %s, want unconfined in %s", n, thread, turn, cwd, work)
		}
	}
}
