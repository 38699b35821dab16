// Package confine is lane isolation (codex.isolation: lanes): each lane's
// commands see its own directories and nothing else.
package confine

import (
	"context"
	"os"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// The app-server defines one permissions profile (codex.LaneProfile) that
// grants the system paths a toolchain reads and the thread's workspace
// roots, and nothing else: codex's sandbox (bubblewrap on Linux) builds
// each command's view of the file system from it. This feature names the
// profile and the lane's own roots on every thread/start, thread/resume and
// turn/start, so a command on one lane sees its working directory, its
// files directory and its temporary directory — not the database,
// CODEX_HOME, the config directory or any other lane's directories.
//
// Where those directories are is the core's: it places them from its
// configuration (ext.Host.LaneDirs), and says whether lanes are isolated
// at all (ext.Host.LaneProfile).

// Confinement sends each lane's roots with its thread and turns.
type Confinement struct {
	profile string
	host    ext.Host
	log     *zap.Logger
}

// New is lane isolation as the host configures it.
func New() *Confinement { return &Confinement{} }

// Name is the feature's name.
func (c *Confinement) Name() string { return "confine" }

// Register adds the hooks when lanes are isolated. The core's thread and
// input hooks ran before these (worktrees added the repository a
// worktree's commits go to); the lane's own roots go first, the working
// directory first of all, since codex resolves relative paths against it.
func (c *Confinement) Register(h ext.Host) error {
	c.host, c.log, c.profile = h, h.Logger(), h.LaneProfile()
	if c.profile == "" {
		return nil
	}
	h.OnPrepare(func(_ context.Context, t ext.Turn) { c.makeDirs(t.Lane().Key(), t.Dir()) })
	h.OnThread(func(sl store.Lane, dir string, cfg *codex.ThreadConfig) {
		cfg.Confine = c.of(sl.SessionKey, dir, cfg.Confine.Roots)
	})
	h.OnInput(func(_ context.Context, t ext.Turn, in *codex.TurnInput) {
		in.Confine = c.of(t.Lane().Key(), t.Dir(), in.Confine.Roots)
	})
	return nil
}

// of is the confinement of the lane working in dir: its roots, the
// working directory first, then the roots the core granted (granted).
func (c *Confinement) of(sessionKey, dir string, granted []string) codex.Confinement {
	own := c.host.LaneDirs(sessionKey)
	roots := make([]string, 0, 3+len(granted))
	for _, r := range []string{dir, own.Files, own.Temp} {
		if r != "" {
			roots = append(roots, r)
		}
	}
	conf := codex.Confinement{Profile: c.profile, Roots: append(roots, granted...)}
	if own.Temp != "" {
		conf.Env = map[string]string{"TMPDIR": own.Temp, "HOME": own.Temp}
	}
	return conf
}

// makeDirs creates the lane's own roots before its thread is loaded: the
// sandbox can only grant a directory that exists. A project's directory is
// the operator's and is left alone. A failure is logged; codex then
// refuses the thread or the command, and the turn reports it.
func (c *Confinement) makeDirs(sessionKey, dir string) {
	own := c.host.LaneDirs(sessionKey)
	dirs := []string{own.Files, own.Temp}
	if dir != "" && dir == own.Work {
		dirs = append(dirs, dir)
	}
	for _, d := range dirs {
		if d == "" {
			continue
		}
		if err := os.MkdirAll(d, 0o700); err != nil {
			c.log.Warn("lane.dir_failed", zap.String("lane", sessionKey), zap.String("dir", d), zap.Error(err))
		}
	}
}
