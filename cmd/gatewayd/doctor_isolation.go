package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// checkIsolation probes codex.isolation as a lane's command meets it: a
// command/exec in a throwaway directory, under the lane profile when lanes
// are isolated. Its write into that directory must succeed first, or the
// sandbox cannot run here and a refused read would prove nothing; then it
// must fail to read a canary beside it, the database, the state
// directory, CODEX_HOME and the config file.
func (d *doctor) checkIsolation(ctx context.Context, cx *codex.Client, cfg *config.Config) {
	pctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	scratch, err := os.MkdirTemp("", "gatewayd-doctor-isolation-")
	if err != nil {
		d.fail(fmt.Sprintf("lane isolation: cannot make a probe directory: %v", err), "check that $TMPDIR is writable")
		return
	}
	defer os.RemoveAll(scratch)
	lane, canary := filepath.Join(scratch, "lane"), filepath.Join(scratch, "other-lane.txt")
	if err := os.Mkdir(lane, 0o700); err != nil || os.WriteFile(canary, []byte("canary"), 0o600) != nil {
		d.fail(fmt.Sprintf("lane isolation: cannot prepare the probe in %s", scratch), "check that $TMPDIR is writable")
		return
	}
	profile := ""
	if cfg.Codex.IsolatesLanes() {
		profile = codex.LaneProfile
	}
	p := isolationProbe{cx: cx, dir: lane, profile: profile}
	if fail := p.canWrite(pctx); fail != "" {
		d.fail("lane isolation: a command under the lane profile cannot run: "+fail,
			"codex's sandbox (bubblewrap) needs unprivileged user namespaces: check `sysctl kernel.unprivileged_userns_clone` "+
				"and AppArmor's `kernel.apparmor_restrict_unprivileged_userns`, or the unit's RestrictNamespaces=; "+
				"codex.isolation: none runs commands unconfined (every lane sees the others)")
		return
	}
	read := p.readable(pctx, append([]string{canary}, secretPaths(cfg)...))
	d.reportIsolation(cfg, read)
}

// reportIsolation is the doctor's line for what a lane's command read.
func (d *doctor) reportIsolation(cfg *config.Config, read []string) {
	c := cfg.Codex
	switch {
	case c.Isolation == config.IsolationNone:
		d.fail("lanes are not isolated (codex.isolation: none): a lane's command read "+strings.Join(read, ", "),
			"set codex.isolation: lanes (the default)")
	case c.Sandbox == "danger-full-access":
		d.fail("lanes are not isolated (codex.sandbox: danger-full-access): a lane's command read "+strings.Join(read, ", "),
			"set codex.sandbox: workspace-write (or read-only) with codex.isolation: lanes")
	case len(read) > 0:
		d.fail("lane isolation leaks: a command under the lane profile read "+strings.Join(read, ", "),
			"report it (gatewayd and codex versions above); until then treat every lane as able to read the others")
	case c.Approvals == config.ApprovalsChat:
		d.pass("lanes isolated: a probe command wrote its own directory and could not read the database, the state dir, CODEX_HOME or the config; " +
			"commands approved in chat run outside it (codex.approvals: chat)")
	default:
		d.pass("lanes isolated: a probe command wrote its own directory and could not read the database, the state dir, CODEX_HOME or the config")
	}
}

// secretPaths are what no lane's command may read, those that exist.
func secretPaths(cfg *config.Config) []string {
	var out []string
	candidates := []string{cfg.StateDir, codexHome(cfg), cfg.File}
	if cfg.File != "" {
		candidates = append(candidates, filepath.Dir(cfg.File))
	}
	if !cfg.Store.Postgres() {
		candidates = append([]string{cfg.DatabasePath()}, candidates...)
	}
	for _, p := range candidates {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// codexHome is the CODEX_HOME the app-server uses.
func codexHome(cfg *config.Config) string {
	if cfg.Codex.Home != "" {
		return cfg.Codex.Home
	}
	if h := os.Getenv("CODEX_HOME"); h != "" {
		return h
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".codex")
	}
	return ""
}

// isolationProbe runs the doctor's commands as a lane working in dir.
type isolationProbe struct {
	cx      *codex.Client
	dir     string
	profile string
}

// canWrite writes a file in the lane's directory through the sandbox; it
// returns why not, or "".
func (p isolationProbe) canWrite(ctx context.Context) string {
	res, err := p.cx.Exec(ctx, []string{"sh", "-c", "echo probe > probe.txt && cat probe.txt"}, p.dir, p.profile)
	switch {
	case err != nil:
		return err.Error()
	case res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "probe":
		return fmt.Sprintf("exit %d: %s", res.ExitCode, firstLine(res.Stderr+res.Stdout))
	}
	return ""
}

// readable lists the paths the lane's command could read (a file's bytes
// or a directory's names).
func (p isolationProbe) readable(ctx context.Context, paths []string) []string {
	var read []string
	for _, path := range paths {
		res, err := p.cx.Exec(ctx, []string{"sh", "-c", `cat "$1" >/dev/null 2>&1 || ls "$1" >/dev/null 2>&1`, "probe", path}, p.dir, p.profile)
		if err != nil || res.ExitCode == 0 {
			read = append(read, path)
		}
	}
	return read
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
