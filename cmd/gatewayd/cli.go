package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/daemon"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/doctor"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/setup"
)

// version is set at build time: -ldflags "-X main.version=v1.2.3".
var version = ""

// Run executes one gatewayd command and returns its exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	std := cli.Stdio{In: stdin, Out: stdout, Err: stderr}
	err := dispatch(ctx, args, std)
	if err != nil && !errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stderr, "gatewayd: %v\n", err)
		var ue *cli.UsageError
		if errors.As(err, &ue) {
			fmt.Fprint(stderr, "\n"+cli.Usage)
		}
	}
	if errors.Is(err, flag.ErrHelp) {
		return cli.ExitOK
	}
	return cli.ExitCode(err)
}

func dispatch(ctx context.Context, args []string, std cli.Stdio) error {
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
		return setup.Run(ctx, rest, std, Version())
	case "version":
		printVersion(std.Out)
		return nil
	case "chat":
		return client.Chat(ctx, rest, std)
	case "send":
		return client.Send(ctx, rest, std)
	case "sessions":
		return client.Sessions(ctx, rest, std)
	case "doctor":
		return doctor.Run(ctx, rest, std, Version())
	case "cluster":
		return client.Cluster(ctx, rest, std)
	case "worktrees":
		return client.Worktrees(ctx, rest, std)
	case "help", "-h", "--help":
		fmt.Fprint(std.Out, cli.Usage)
		return nil
	}
	return cli.Usagef("unknown command %q", cmd)
}

// commit may be set at build time (-ldflags "-X main.commit=SHA") where
// the build has no VCS stamp (-buildvcs=false, a source tarball).
var commit = ""

// printVersion is `gatewayd version`: the first line stays "gatewayd
// VERSION" (scripts read it); then the commit (the -X flag, else the VCS
// stamp of the build, else "unknown"), the Go release and the codex
// release this gatewayd was verified against (doctor.PinnedCodexVersion, which
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
	fmt.Fprintln(w, "codex (pinned):", doctor.PinnedCodexVersion)
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

func cmdCheckConfig(args []string, std cli.Stdio) error {
	f := cli.NewFlags("check-config", std)
	pos, err := f.Parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return cli.Usagef("check-config takes no arguments, got %q", pos)
	}
	cfg, err := f.Load()
	if err != nil {
		return err
	}
	if err := daemon.CheckRuntime(cfg); err != nil {
		return err
	}
	fmt.Fprint(std.Out, cfg.Redacted())
	return nil
}
