package daemon

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/worktree"
)

// Lane isolation (codex.isolation). The app-server is started with the
// lane permissions profile defined (codex.IsolationArgs) and made its
// default; the gateway names it, and each lane's own directories, on every
// thread and turn. What it does not cover is said at start, where an
// operator reading the log looks for it.

// tempRoot holds each lane's TMPDIR and HOME.
func tempRoot(cfg *config.Config) string { return filepath.Join(cfg.StateDir, "tmp") }

// CodexArgs are codex.args, then the isolation profile's definition when
// lanes are isolated. The command was checked by preflight.
func CodexArgs(cfg *config.Config) ([]string, error) {
	args := slices.Clip(cfg.Codex.Args)
	if !cfg.Codex.IsolatesLanes() {
		return args, nil
	}
	binary, err := codex.ResolveCommand(cfg.Codex.Command)
	if err != nil {
		return nil, err
	}
	write := cfg.Codex.Sandbox != "read-only"
	return append(args, codex.IsolationArgs(codex.CodexDir(binary), write, DeniedToLanes(cfg), ReadableToLanes(cfg))...), nil
}

// ReadableToLanes is what every lane may read and none may write beyond
// its own roots: the object directory of each project's git repository,
// which a lane's worktree repository borrows (worktree.ObjectsOf). The
// rest of the project's .git — config, hooks, refs, other lanes' branches
// — stays out of reach. A project added by a reload is granted at the
// next start of the app-server; until then git in its lanes' worktrees
// cannot read the project's history (the daemon's own git still can).
func ReadableToLanes(cfg *config.Config) []string {
	if !cfg.Lanes.Worktrees {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []string
	for _, dir := range cfg.Projects {
		for _, objects := range worktree.ObjectDirsOf(ctx, dir) {
			if !slices.Contains(out, objects) {
				out = append(out, objects)
			}
		}
	}
	slices.Sort(out)
	return out
}

// DeniedToLanes is what no lane's command may see, wherever it lives:
// the state directory (the database, every lane's files), codex.cwd
// (every project-less lane's directory), CODEX_HOME (credentials and
// rollouts), the config file's directory (the environment file beside
// it), and every file a secret is read from (each *_file key, each
// webhook's secret_file: config.SecretFiles) with the directory holding
// it, where its neighbours (a key, a certificate) are likely secrets too.
// Each lane's own directories, under the first two, stay reachable as its
// workspace roots. The list matters most for paths under /etc or /usr,
// which the profile's system paths grant.
func DeniedToLanes(cfg *config.Config) []string {
	configDir := ""
	if cfg.File != "" {
		configDir = filepath.Dir(cfg.File)
	}
	paths := []string{cfg.StateDir, configDir, cfg.Codex.Cwd, CodexHome(cfg)}
	for _, f := range cfg.SecretFiles() {
		paths = append(paths, f, secretsDir(f))
	}
	var out []string
	add := func(p string) {
		if abs, err := filepath.Abs(p); err == nil && !slices.Contains(out, abs) {
			out = append(out, abs)
		}
	}
	for _, p := range paths {
		if p == "" {
			continue
		}
		add(p)
		// A symlink's target may lie under a path the profile grants.
		if real, err := filepath.EvalSymlinks(p); err == nil {
			add(real)
		}
	}
	return outermost(out)
}

// outermost drops the paths inside another of paths: the sandbox cannot
// mask a file inside a directory it already masked (bubblewrap fails the
// command), and the directory's mask hides the file anyway.
func outermost(paths []string) []string {
	out := paths[:0:0]
	for _, p := range paths {
		inside := false
		for _, q := range paths {
			if rel, err := filepath.Rel(q, p); err == nil && q != p && rel != ".." && !strings.HasPrefix(rel, "../") {
				inside = true
				break
			}
		}
		if !inside {
			out = append(out, p)
		}
	}
	return out
}

// secretsDir is the directory holding the secret file f, "" when that is
// a top-level directory (/etc, /): denying all of it would take the
// system's files from every lane, so there only the file is denied.
func secretsDir(f string) string {
	abs, err := filepath.Abs(f)
	if err != nil {
		return ""
	}
	dir := filepath.Dir(abs)
	if filepath.Dir(dir) == dir || filepath.Dir(filepath.Dir(dir)) == filepath.Dir(dir) {
		return ""
	}
	return dir
}

// CodexHome is the CODEX_HOME the app-server runs with: codex.home, else
// the inherited $CODEX_HOME, else ~/.codex.
func CodexHome(cfg *config.Config) string {
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

// gatewayIsolation is the gateway's part: the profile to name and where
// lanes keep their temporary files; zero when lanes are not isolated.
func gatewayIsolation(cfg *config.Config) gateway.Isolation {
	if !cfg.Codex.IsolatesLanes() {
		return gateway.Isolation{}
	}
	return gateway.Isolation{Profile: codex.LaneProfile, TempRoot: tempRoot(cfg)}
}

// warnIsolation logs, once at start, each way the configuration leaves a
// lane's commands able to read beyond the lane.
func warnIsolation(cfg *config.Config, log *zap.Logger) {
	c := cfg.Codex
	switch {
	case c.Isolation == config.IsolationNone:
		log.Warn("isolation.off", zap.String("key", "codex.isolation"), zap.String("reason",
			"codex.isolation is none: every lane's commands can read the database, every lane's files and working directory, "+
				"the config directory and CODEX_HOME (credentials and every thread's rollout)"))
	case c.Sandbox == "danger-full-access":
		log.Warn("isolation.off", zap.String("key", "codex.sandbox"), zap.String("reason",
			"codex.sandbox is danger-full-access: commands run unsandboxed, so lanes are not isolated from each other or from the daemon's files"))
	case c.Approvals == config.ApprovalsChat:
		log.Warn("isolation.partial", zap.String("key", "codex.approvals"), zap.String("reason",
			"codex.approvals is chat: codex may rerun a command allowed in chat without the sandbox, unasked, when the sandbox stopped it "+
				"(requests to leave the sandbox are declined unless codex.allow_escalation)"))
	}
}

// worktreesDir is where lanes on a git project get their worktrees; ""
// with lanes.worktrees off.
func worktreesDir(cfg *config.Config) string {
	if !cfg.Lanes.Worktrees {
		return ""
	}
	return cfg.WorktreesDir()
}
