package gateway

import (
	"context"
	"os"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// Lane isolation (codex.isolation: lanes). The app-server defines
// one permissions profile (codex.LaneProfile) that grants the system paths
// a toolchain reads and the thread's workspace roots, and nothing else:
// codex's sandbox (bubblewrap on Linux) builds each command's view of the
// file system from it. This module names the profile and the lane's own
// roots on every thread/start, thread/resume and turn/start, so a command
// on one lane sees its working directory, its files directory and its
// temporary directory — not the database, CODEX_HOME, the config directory
// or any other lane's directories.

// Isolation is codex.isolation as the gateway applies it.
type Isolation struct {
	// Profile is the permissions profile the app-server was started with
	// (codex.LaneProfile); "" leaves lanes unconfined (codex.isolation:
	// none, or a danger-full-access sandbox).
	Profile string
	// TempRoot holds each lane's temporary directory, its commands'
	// TMPDIR and HOME (/tmp and the daemon's home are not in the sandbox):
	// <state_dir>/tmp.
	TempRoot string
}

func (i Isolation) on() bool { return i.Profile != "" }

// confinement sends each lane's roots with its thread and turns.
type confinement struct {
	iso      Isolation
	workRoot string       // codex.cwd: project-less lanes work in a directory of their own under it
	files    *files.Store // nil: the lane has no files directory
	log      *zap.Logger
}

func newConfinement(cfg Config, log *zap.Logger) *confinement {
	return &confinement{iso: cfg.Isolation, workRoot: cfg.Thread.Cwd, files: cfg.Files, log: log}
}

// register adds the hooks when lanes are isolated. prepare runs after the
// projects module chose the turn's directory.
func (c *confinement) register(h *host) {
	if !c.iso.on() {
		return
	}
	h.hooks.prepare = append(h.hooks.prepare, func(_ context.Context, t *turn) { c.makeDirs(t.l.key, t.dir) })
	h.hooks.thread = append(h.hooks.thread, func(sl store.Lane, dir string, cfg *codex.ThreadConfig) {
		cfg.Confine = c.of(sl.SessionKey, dir)
	})
	h.hooks.input = append(h.hooks.input, func(_ context.Context, t *turn, in *codex.TurnInput) {
		in.Confine = c.of(t.l.key, t.dir)
	})
}

// of is the confinement of the lane working in dir: its roots, the
// working directory first (codex resolves relative paths against it).
func (c *confinement) of(sessionKey, dir string) codex.Confinement {
	tmp := c.tempDir(sessionKey)
	roots := make([]string, 0, 3)
	for _, r := range []string{dir, c.filesDir(sessionKey), tmp} {
		if r != "" {
			roots = append(roots, r)
		}
	}
	conf := codex.Confinement{Profile: c.iso.Profile, Roots: roots}
	if tmp != "" {
		conf.Env = map[string]string{"TMPDIR": tmp, "HOME": tmp}
	}
	return conf
}

func (c *confinement) tempDir(sessionKey string) string {
	if c.iso.TempRoot == "" {
		return ""
	}
	return filepath.Join(c.iso.TempRoot, files.DirName(sessionKey))
}

func (c *confinement) filesDir(sessionKey string) string {
	if c.files == nil {
		return ""
	}
	return c.files.LaneDir(sessionKey)
}

// makeDirs creates the lane's own roots before its thread is loaded: the
// sandbox can only grant a directory that exists. A project's directory is
// the operator's and is left alone. A failure is logged; codex then
// refuses the thread or the command, and the turn reports it.
func (c *confinement) makeDirs(sessionKey, dir string) {
	own := []string{c.filesDir(sessionKey), c.tempDir(sessionKey)}
	if dir != "" && dir == files.WorkDir(c.workRoot, sessionKey) {
		own = append(own, dir)
	}
	for _, d := range own {
		if d == "" {
			continue
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			c.log.Warn("lane.dir_failed", zap.String("lane", sessionKey), zap.String("dir", d), zap.Error(err))
		}
	}
}
