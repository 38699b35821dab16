package doctor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/daemon"
	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// checkIsolation probes codex.isolation as a lane's command meets it: a
// command/exec in a throwaway directory, under the lane profile when lanes
// are isolated. Its write into that directory must succeed first, or the
// sandbox cannot run here and a refused read would prove nothing; then it
// must fail to read a canary beside it, the database, the config file and
// the files beside it, and those of the state directory and CODEX_HOME.
// Unconfined, the same reads name what every lane can see.
func (d *doctor) checkIsolation(ctx context.Context, cx *codex.Client, cfg *config.Config) {
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
	// Unconfined, only the reads matter: they show what a lane can see.
	if fail := p.canWriteUnder(ctx); fail != "" {
		d.fail("lane isolation: a command under the lane profile cannot run: "+fail,
			"codex's sandbox (bubblewrap) needs unprivileged user namespaces: check `sysctl kernel.unprivileged_userns_clone` "+
				"and AppArmor's `kernel.apparmor_restrict_unprivileged_userns`, or the unit's RestrictNamespaces=; "+
				"codex.isolation: none runs commands unconfined (every lane sees the others)")
		return
	}
	read, err := p.readable(ctx, append([]string{canary}, secretFiles(cfg)...))
	if err != nil {
		// A probe that did not run proves nothing either way: say so,
		// rather than count the file as read or as safe.
		d.fail("lane isolation: a probe command did not finish: "+err.Error(),
			"run gatewayd doctor again when the machine is less busy; if it persists, report it")
		return
	}
	d.reportIsolation(cfg, read, canary)
}

// reportIsolation is the doctor's line for what a lane's command read.
func (d *doctor) reportIsolation(cfg *config.Config, read []string, canary string) {
	c, what := cfg.Codex, readList(read, canary)
	switch {
	case c.Isolation == config.IsolationNone:
		d.fail("lanes are not isolated (codex.isolation: none): a lane's command read "+what,
			"set codex.isolation: lanes (the default)")
	case c.Sandbox == "danger-full-access":
		d.fail("lanes are not isolated (codex.sandbox: danger-full-access): a lane's command read "+what,
			"set codex.sandbox: workspace-write (or read-only) with codex.isolation: lanes")
	case len(read) > 0:
		d.fail("lane isolation leaks: a command under the lane profile read "+what,
			"report it (gatewayd and codex versions above); until then treat every lane as able to read the others")
	case c.Approvals == config.ApprovalsChat:
		d.pass("lanes isolated: a probe command wrote its own directory and could not read %s; "+
			"codex may rerun a command allowed in chat without it, unasked (codex.approvals: chat)", unreadList(cfg))
	default:
		d.pass("lanes isolated: a probe command wrote its own directory and could not read %s", unreadList(cfg))
	}
}

// unreadList names what the probe failed to read: the fixed places, and
// the secret files the configuration names (every *_file key), which
// secretFiles probed with their directories.
func unreadList(cfg *config.Config) string {
	what := "the database, the state dir, CODEX_HOME or the config"
	if secrets := cfg.SecretFiles(); len(secrets) > 0 {
		what += " or the secret files " + strings.Join(secrets, ", ") + " and their directories"
	}
	return what
}

// readList names what was read, briefly: the first few files and how
// many more.
func readList(read []string, canary string) string {
	const shown = 4
	names := make([]string, 0, shown)
	for _, p := range read {
		if len(names) == shown {
			break
		}
		if p == canary {
			p = "a file outside its directory"
		}
		names = append(names, p)
	}
	if more := len(read) - len(names); more > 0 {
		names = append(names, fmt.Sprintf("and %d more", more))
	}
	if len(names) == 0 {
		return "nothing probed"
	}
	return strings.Join(names, ", ")
}

// secretFiles are files no lane's command may read, those that exist:
// the database, the config file and every file beside it (the environment
// file), and the files at the top of the state directory and CODEX_HOME
// (auth.json). Files, not directories: the sandbox shows an empty skeleton
// of a directory above a path it mounts, which reveals nothing.
func secretFiles(cfg *config.Config) []string {
	var out []string
	add := func(p string) {
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if !cfg.Store.Postgres() {
		add(cfg.DatabasePath())
	}
	if cfg.File != "" {
		add(cfg.File)
	}
	for _, dir := range daemon.DeniedToLanes(cfg) {
		add(dir) // a token file
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			add(filepath.Join(dir, e.Name()))
		}
	}
	return out
}

// isolationProbe runs the doctor's commands as a lane working in dir.
type isolationProbe struct {
	cx      *codex.Client
	dir     string
	profile string
}

// canWriteUnder writes a file in the lane's directory through the lane
// profile; it returns why not, or "" (also when there is no profile to
// check).
func (p isolationProbe) canWriteUnder(ctx context.Context) string {
	if p.profile == "" {
		return ""
	}
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	res, err := p.cx.Exec(ctx, []string{"sh", "-c", "echo probe > probe.txt && cat probe.txt"}, p.dir, p.profile)
	switch {
	case err != nil:
		return err.Error()
	case res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "probe":
		return fmt.Sprintf("exit %d: %s", res.ExitCode, firstLine(res.Stderr+res.Stdout))
	}
	return ""
}

// readable lists the files the lane's command could read. Each read has
// its own deadline: CODEX_HOME holds more files with every codex release
// (0.171's state database keeps a WAL beside it), and on a busy machine
// one deadline for them all ran out before the last one was tried. A read
// that could not be run is an error, not a file read.
func (p isolationProbe) readable(ctx context.Context, paths []string) ([]string, error) {
	var read []string
	for _, path := range paths {
		res, err := p.exec(ctx, "cat", path)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if res.ExitCode == 0 {
			read = append(read, path)
		}
	}
	return read, nil
}

// exec runs one probe command as the lane, within doctorTimeout.
func (p isolationProbe) exec(ctx context.Context, argv ...string) (codex.ExecResult, error) {
	ctx, cancel := context.WithTimeout(ctx, doctorTimeout)
	defer cancel()
	return p.cx.Exec(ctx, argv, p.dir, p.profile)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
