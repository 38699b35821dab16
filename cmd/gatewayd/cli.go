package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/daemon"
	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway"
)

// Exit codes; documented in the package comment and the usage text.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = ""

const usageText = `Usage:
  gatewayd [run] [--config FILE]        run the daemon (default command)
  gatewayd check-config [--config FILE] validate; print the effective config (secrets redacted)
  gatewayd init [--config FILE] [--env-file FILE] [--telegram-token-file F] [--discord-token-file F]
               [--allow-user [PLATFORM:]ID]... [--project NAME=DIR]... [--yes] [--force]
                                        write a config and the token env file (asks in a terminal)
  gatewayd version                      print the version
  gatewayd doctor [--config FILE]       check config, state, codex, its account, tokens, api.listen and who may use it
  gatewayd cluster status [--config FILE]  nodes (heartbeat age), lanes per node, the Telegram poller
  gatewayd chat [--config FILE] [LANE]  talk to a lane through the local API (default lane "default")
  gatewayd send [--config FILE] [--json] LANE [TEXT...]
                                        send one message (TEXT, else stdin) to the API lane LANE of the
                                        running daemon; print the reply (--json: the whole answer)
  gatewayd sessions list [--config FILE] [--limit N]
  gatewayd sessions show KEY [--config FILE] [--limit N]
  gatewayd sessions search TEXT... [--config FILE] [--limit N]
                                        full-text search of every lane's transcripts
  gatewayd sessions reset KEY [--config FILE]
                                        reset = /reset in the lane; goes through the running daemon
  gatewayd worktrees prune [--config FILE]
                                        remove now the worktrees kept past lanes.worktree_retention

Configuration: --config FILE, else $GATEWAYD_CONFIG, else ~/.config/gatewayd/gatewayd.yaml or
/etc/gatewayd/gatewayd.yaml if present; every key can be set as GATEWAYD_<KEY> (dots → "_").

Exit codes:
  0  success (run: clean shutdown after SIGTERM/SIGINT)
  1  runtime failure (store, app-server, platform or network error; forced exit on a second signal;
     doctor: a check failed; send: the turn did not complete or the daemon is unreachable)
  2  configuration or usage error (also: a platform rejected its bot token)
`

// usageError is a command-line mistake (exit 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// exitCode maps an error to the documented exit codes. A platform that
// rejects its configuration at run time (a revoked bot token) is a
// configuration error too: exit 2 is the status systemd does not restart.
func exitCode(err error) int {
	var ue *usageError
	var ce *config.Error
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue), errors.As(err, &ce), errors.Is(err, gateway.ErrConfig):
		return exitUsage
	}
	return exitFailure
}

// io bundles the standard streams so commands can be tested.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

// Run executes one gatewayd command and returns its exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	std := stdio{in: stdin, out: stdout, err: stderr}
	err := dispatch(ctx, args, std)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stderr, "gatewayd: %v\n", err)
		var ue *usageError
		if errors.As(err, &ue) {
			fmt.Fprint(stderr, "\n"+usageText)
		}
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitCode(err)
}

func dispatch(ctx context.Context, args []string, std stdio) error {
	cmd, rest := "run", args
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, rest = args[0], args[1:]
	}
	switch cmd {
	case "run":
		return cmdRun(ctx, rest, std)
	case "check-config":
		return cmdCheckConfig(rest, std)
	case "init":
		return cmdInit(ctx, rest, std)
	case "version":
		printVersion(std.out)
		return nil
	case "chat":
		return cmdChat(ctx, rest, std)
	case "send":
		return cmdSend(ctx, rest, std)
	case "sessions":
		return cmdSessions(ctx, rest, std)
	case "doctor":
		return cmdDoctor(ctx, rest, std)
	case "cluster":
		return cmdCluster(ctx, rest, std)
	case "worktrees":
		return cmdWorktrees(ctx, rest, std)
	case "help", "-h", "--help":
		fmt.Fprint(std.out, usageText)
		return nil
	}
	return usagef("unknown command %q", cmd)
}

// commit may be set at build time (-ldflags "-X main.commit=SHA") where
// the build has no VCS stamp (-buildvcs=false, a source tarball).
var commit = ""

// printVersion is `gatewayd version`: the first line stays "gatewayd
// VERSION" (scripts read it); then the commit (the -X flag, else the VCS
// stamp of the build, else "unknown"), the Go release and the codex
// release this gatewayd was verified against (pinnedCodexVersion, which
// TestPinnedCodexVersionMatchesTools keeps equal to tools/package.json).
func printVersion(w io.Writer) {
	rev, modified := commit, false
	if bi, ok := debug.ReadBuildInfo(); ok && rev == "" {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	switch {
	case rev == "":
		rev = "unknown"
	case modified:
		rev += " (modified)"
	}
	fmt.Fprintln(w, "gatewayd", Version())
	fmt.Fprintln(w, "commit:", rev)
	fmt.Fprintln(w, "go:", runtime.Version())
	fmt.Fprintln(w, "codex (pinned):", pinnedCodexVersion)
}

// Version is the build version: the -X flag, else the module version.
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// flags is the common flag set: --config plus command-specific ones.
type flags struct {
	fs     *flag.FlagSet
	config string
}

func newFlags(name string, std stdio) *flags {
	f := &flags{fs: flag.NewFlagSet(name, flag.ContinueOnError)}
	f.fs.SetOutput(std.err)
	f.fs.Usage = func() { fmt.Fprint(std.err, usageText) }
	f.fs.StringVar(&f.config, "config", "", "config file (YAML)")
	return f
}

// parse accepts flags before and after positional arguments
// ("sessions show KEY --config f" and "sessions show --config f KEY").
func (f *flags) parse(args []string) ([]string, error) {
	var positional []string
	for {
		if err := f.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, usagef("%v", err)
		}
		args = f.fs.Args()
		if len(args) == 0 {
			return positional, nil
		}
		positional = append(positional, args[0])
		args = args[1:]
	}
}

func (f *flags) load() (*config.Config, error) {
	return config.Load(config.Options{File: f.config, Env: os.Environ()})
}

func cmdCheckConfig(args []string, std stdio) error {
	f := newFlags("check-config", std)
	pos, err := f.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("check-config takes no arguments, got %q", pos)
	}
	cfg, err := f.load()
	if err != nil {
		return err
	}
	if err := daemon.CheckRuntime(cfg); err != nil {
		return err
	}
	fmt.Fprint(std.out, cfg.Redacted())
	return nil
}
