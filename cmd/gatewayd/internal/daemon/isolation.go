package daemon

import (
	"path/filepath"
	"slices"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/runtime/codex"
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
	return append(args, codex.IsolationArgs(codex.CodexDir(binary), write)...), nil
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
			"codex.approvals is chat: a command approved in chat (or a retry without the sandbox) runs outside the lane's confinement"))
	}
}
