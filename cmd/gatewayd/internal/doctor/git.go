package doctor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/worktree"
)

// checkGitBoundary proves on this machine that a lane cannot turn the
// daemon's own git against it: in a throwaway repository, a
// lane's worktree is made as the daemon makes them; a command under the
// lane profile tries to set core.fsmonitor and write a hook in the
// worktree's .git (the sandbox must refuse both); then the doctor plants
// both itself, as if the sandbox had let them through, and runs the
// daemon's snapshot and diff. ✓ only when nothing planted ran.
func (d *doctor) checkGitBoundary(ctx context.Context, cx *codex.Client, cfg *config.Config) {
	if !cfg.Lanes.Worktrees {
		return
	}
	if _, err := exec.LookPath("git"); err != nil {
		return // no git, no worktrees: the projects line says so
	}
	scratch, err := os.MkdirTemp("", "gatewayd-doctor-git-")
	if err != nil {
		d.fail(fmt.Sprintf("git boundary: cannot make a probe directory: %v", err), "check that $TMPDIR is writable")
		return
	}
	defer os.RemoveAll(scratch)
	ran, wrote, err := probeGitBoundary(ctx, cx, cfg.Codex.IsolatesLanes(), scratch)
	switch {
	case err != nil:
		d.fail("git boundary: the probe could not run: "+err.Error(), "check that git works for the daemon's user")
	case len(ran) > 0:
		d.fail("git boundary broken: the daemon's git ran what a lane planted: "+strings.Join(ran, ", "),
			"report it (gatewayd, git and codex versions above); until then set lanes.worktrees: false")
	case wrote && cfg.Codex.IsolatesLanes():
		d.fail("git boundary: a command under the lane profile wrote its worktree's .git (the daemon's git still ran none of it)",
			"report it (gatewayd and codex versions above)")
	case !cfg.Codex.IsolatesLanes():
		d.pass("git boundary: the daemon's git ran neither a planted core.fsmonitor nor a planted hook (lanes are not isolated, so their commands can still write their .git)")
	default:
		d.pass("git boundary: a lane's command could not write its worktree's .git, and the daemon's git ran neither a planted core.fsmonitor nor a planted hook")
	}
}

// probeGitBoundary runs the probe in scratch and returns what ran of the
// planted things and whether the lane's command could write its .git.
func probeGitBoundary(ctx context.Context, cx *codex.Client, confined bool, scratch string) (ran []string, wrote bool, err error) {
	project, marks := filepath.Join(scratch, "project"), filepath.Join(scratch, "marks")
	if err := os.MkdirAll(marks, 0o700); err != nil {
		return nil, false, err
	}
	if err := throwawayRepo(ctx, project); err != nil {
		return nil, false, err
	}
	e, err := worktree.Ensure(ctx, worktree.Lane{Project: project, Dir: filepath.Join(scratch, "lane"), Slug: "doctor"})
	if err != nil {
		return nil, false, err
	}
	fsmonitor := "touch " + filepath.Join(marks, "fsmonitor") + "; false"
	hook := "#!/bin/sh\ntouch " + filepath.Join(marks, "hook") + "\n"
	profile := ""
	if confined {
		profile = codex.LaneProfile
	}
	res, err := cx.Exec(ctx, []string{"sh", "-c", fmt.Sprintf("git config core.fsmonitor %q && echo WROTE", fsmonitor)}, e.Work, profile)
	if err != nil {
		return nil, false, err
	}
	wrote = strings.Contains(res.Stdout, "WROTE")
	// As if the sandbox had let the lane through.
	planted := map[string]string{
		filepath.Join(e.GitDir, "config"):                         "[core]\n\tfsmonitor = \"" + fsmonitor + "\"\n",
		filepath.Join(e.GitDir, "hooks", "reference-transaction"): hook,
		filepath.Join(e.GitDir, "hooks", "post-checkout"):         hook,
	}
	for path, body := range planted {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return nil, wrote, err
		}
		if err := os.WriteFile(path, []byte(body), 0o700); err != nil {
			return nil, wrote, err
		}
	}
	if err := os.WriteFile(filepath.Join(e.Work, "changed.txt"), []byte("x\n"), 0o600); err != nil {
		return nil, wrote, err
	}
	snap, err := worktree.Snapshot(ctx, e.Tree)
	if err == nil {
		err = worktree.Save(ctx, e.Tree, "doctor", snap)
	}
	if err == nil {
		_, err = worktree.Diff(ctx, e.Tree)
	}
	if err != nil {
		return nil, wrote, err
	}
	for _, m := range []string{"fsmonitor", "hook"} {
		if _, err := os.Stat(filepath.Join(marks, m)); err == nil {
			ran = append(ran, m)
		}
	}
	return ran, wrote, nil
}

// throwawayRepo makes a repository with one commit at dir.
func throwawayRepo(ctx context.Context, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("doctor\n"), 0o600); err != nil {
		return err
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "doctor"}} {
		cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir, "-c", "core.hooksPath=/dev/null"}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null",
			"GIT_AUTHOR_NAME=gatewayd", "GIT_AUTHOR_EMAIL=gatewayd@localhost", "GIT_COMMITTER_NAME=gatewayd", "GIT_COMMITTER_EMAIL=gatewayd@localhost")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", args[0], err, firstLine(string(out)))
		}
	}
	return nil
}
