package codex

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
)

// ApprovalRequest is a server→client approval request, flattened.
type ApprovalRequest struct {
	Kind                     string // "command" | "fileChange" | other method
	ThreadID, TurnID, ItemID string
	Command, Cwd, Reason     string
	// GrantRoot (a file change) asks for writes under this directory for
	// the rest of the session.
	GrantRoot string
	// Files are the paths the file change writes, from its fileChange
	// item (item/started); the request itself names none.
	Files []FileChange
	// Network is the host of a managed-network prompt (a command asking
	// for network access the sandbox blocks).
	Network string
	// ExtraPermissions: the command asks for file-system or network
	// permissions beyond the sandbox's (additionalPermissions).
	ExtraPermissions bool
	Raw              json.RawMessage
}

// Decision answers an approval request. Only the v2 strings are valid: the
// app-server rejects the legacy v1 words ("approved", "denied").
type Decision string

// The decisions the app-server accepts.
const (
	DecisionAccept           Decision = "accept"
	DecisionAcceptForSession Decision = "acceptForSession"
	DecisionDecline          Decision = "decline"
	DecisionCancel           Decision = "cancel" // ends the turn as interrupted
)

// valid reports whether d is one of the v2 decision strings.
func (d Decision) valid() bool {
	switch d {
	case DecisionAccept, DecisionAcceptForSession, DecisionDecline, DecisionCancel:
		return true
	}
	return false
}

// ApprovalHandler decides an approval request. It runs on its own goroutine.
// ctx is the request's own: it is cancelled when the request is resolved
// elsewhere (serverRequest/resolved, e.g. its turn was interrupted), when
// its turn completes, or when the process dies or the client closes. The
// handler should then drop any pending question and return at once; its
// decision is not sent. Codex has no approval timeout of its own, so a
// handler should also bound its wait.
type ApprovalHandler func(ctx context.Context, req ApprovalRequest) Decision

// UnsupportedHandler is told about a server request gatewayd refused (any
// method other than the command and file-change approvals, e.g.
// item/permissions/requestApproval) that names a thread, so the owning
// lane can learn why the agent did not get what it asked for. The request
// is already answered with a JSON-RPC error when it runs; it runs on the
// request's own goroutine, never the stdout reader's.
type UnsupportedHandler func(threadID, method string)

// Options configure a Client.
type Options struct {
	Command       string          // codex native binary, or the npm launcher (resolved to the native binary)
	Args          []string        // extra args appended after "app-server" (e.g. "-c", "key=value")
	Home          string          // CODEX_HOME for the process
	Env           []string        // extra environment ("K=V")
	Dir           string          // process working directory
	StartTimeout  time.Duration   // initialize and thread/start (default config.DefaultStartTimeout)
	ResumeTimeout time.Duration   // thread/resume (default config.DefaultResumeTimeout)
	TurnTimeout   time.Duration   // per-turn watchdog → turn/interrupt (default config.DefaultTurnTimeout)
	Approvals     ApprovalHandler // nil → "decline"
	Logger        *zap.Logger
	ClientName    string // default "gatewayd"
	ClientVersion string

	// MaxProcesses and MaxFileSize are the app-server's RLIMIT_NPROC and
	// RLIMIT_FSIZE, which every command it runs inherits (rlimit.go);
	// 0 leaves the limit as inherited. The daemon passes
	// codex.max_processes and codex.max_file_size.
	MaxProcesses int
	MaxFileSize  int64

	// Additions beyond the contract; zero values take the defaults.

	// InterruptGrace bounds the wait for turn/completed after the watchdog
	// (or ctx cancellation) sent turn/interrupt (default 30s).
	InterruptGrace time.Duration
	// HealthInterval is how often the supervisor pings the app-server
	// (default 30s); HealthTimeout is how long a ping may take before the
	// process is considered hung, killed and restarted (default 60s).
	HealthInterval time.Duration
	HealthTimeout  time.Duration
	// RestartBackoff is the first restart delay (default 100ms), doubled per
	// consecutive failure up to RestartBackoffMax (default 30s).
	RestartBackoff    time.Duration
	RestartBackoffMax time.Duration
	// Unsupported, when set, hears of refused server requests (see
	// UnsupportedHandler); nil → they are only logged.
	Unsupported UnsupportedHandler
	// ToolCall serves the dynamic tools of ThreadConfig.DynamicTools
	// (item/tool/call); nil → such calls are refused as unsupported.
	ToolCall ToolCallHandler
	// UserInput answers request_user_input questions (questions.go); nil →
	// they are refused as unsupported.
	UserInput UserInputHandler
	// RateLimitsUpdated, when set, hears every account/rateLimits/updated
	// (merged into the last snapshot); it must not block.
	RateLimitsUpdated RateLimitsHandler
	// OnAccount and OnLogin hear account/updated and
	// account/login/completed (account.go); nil → ignored.
	OnAccount AccountUpdatedHandler
	OnLogin   LoginCompletedHandler
}

func (o Options) withDefaults() Options {
	setDefault(&o.StartTimeout, config.DefaultStartTimeout)
	setDefault(&o.ResumeTimeout, config.DefaultResumeTimeout)
	setDefault(&o.TurnTimeout, config.DefaultTurnTimeout)
	setDefault(&o.InterruptGrace, 30*time.Second)
	setDefault(&o.HealthInterval, 30*time.Second)
	setDefault(&o.HealthTimeout, 60*time.Second)
	setDefault(&o.RestartBackoff, 100*time.Millisecond)
	setDefault(&o.RestartBackoffMax, 30*time.Second)
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.ClientName == "" {
		o.ClientName = "gatewayd"
	}
	if o.ClientVersion == "" {
		o.ClientVersion = "dev"
	}
	if o.Approvals == nil {
		o.Approvals = func(context.Context, ApprovalRequest) Decision { return DecisionDecline }
	}
	return o
}

func setDefault(d *time.Duration, def time.Duration) {
	if *d <= 0 {
		*d = def
	}
}

// DefaultCommand is codex.command's default: codex on PATH, or the bundled
// one.
const DefaultCommand = "codex"

// BundledCommand is where `make package BUNDLE_CODEX=1` installs the native
// codex (the npm package's vendor directory, kept whole: codex finds its
// helpers beside itself). A variable for tests.
var BundledCommand = "/usr/lib/gatewayd/codex/bin/codex"

// npm package and target names per GOARCH, as the launcher (bin/codex.js)
// maps process.arch.
var nativeTargets = map[string]struct{ pkg, triple string }{
	"amd64": {"codex-linux-x64", "x86_64-unknown-linux-musl"},
	"arm64": {"codex-linux-arm64", "aarch64-unknown-linux-musl"},
}

// ResolveCommand returns the native codex binary for command. When command
// is the npm launcher (codex.js, a symlink to it, or a `#!/usr/bin/env node`
// script) it returns the vendored native binary the launcher would run: the
// launcher forks on older node, and killing it alone orphans the app-server,
// which then keeps the thread's writer lock. Other commands are returned as is.
//
// The default command "codex" is the codex a gatewayd package bundles
// (BundledCommand) when that is installed: the package ships the release
// gatewayd was verified against, and an operator's other codex stays
// theirs to choose with an explicit command.
func ResolveCommand(command string) (string, error) {
	if command == "" {
		return "", errors.New("codex: Options.Command is empty")
	}
	if command == DefaultCommand {
		if fi, err := os.Stat(BundledCommand); err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0 {
			return BundledCommand, nil
		}
	}
	path := command
	if !strings.ContainsRune(path, '/') {
		found, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("codex: find %q: %w", command, err)
		}
		path = found
	}
	real, err := filepath.EvalSymlinks(path)
	if err == nil {
		real, err = filepath.Abs(real) // exec would resolve a relative path against Options.Dir
	}
	if err != nil {
		return "", fmt.Errorf("codex: resolve %q: %w", command, err)
	}
	if !isNodeLauncher(real) {
		return real, nil
	}
	native, err := nativeBesideLauncher(real)
	if err != nil {
		return "", fmt.Errorf("codex: %q is the npm launcher: %w", command, err)
	}
	return native, nil
}

// isNodeLauncher reports whether path is a node script.
func isNodeLauncher(path string) bool {
	if strings.HasSuffix(path, ".js") || strings.HasSuffix(path, ".mjs") {
		return true
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	first, err := bufio.NewReader(f).ReadSlice('\n')
	if err != nil && len(first) == 0 {
		return false
	}
	return bytes.HasPrefix(first, []byte("#!")) && bytes.Contains(first, []byte("node"))
}

// nativeBesideLauncher finds the vendored binary for a launcher at
// <pkg>/bin/codex.js, where <pkg> is node_modules/@openai/codex.
func nativeBesideLauncher(launcher string) (string, error) {
	target, ok := nativeTargets[runtime.GOARCH]
	if !ok {
		return "", fmt.Errorf("no native codex package known for %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	pkgRoot := filepath.Dir(filepath.Dir(launcher))
	rel := filepath.Join("vendor", target.triple, "bin", "codex")
	candidates := []string{
		filepath.Join(filepath.Dir(pkgRoot), target.pkg, rel),              // node_modules/@openai/codex-linux-x64
		filepath.Join(pkgRoot, "node_modules", "@openai", target.pkg, rel), // nested install
		filepath.Join(pkgRoot, rel),                                        // vendored in the main package
	}
	for _, c := range candidates {
		if st, err := os.Stat(c); err == nil && st.Mode().IsRegular() {
			return c, nil
		}
	}
	return "", fmt.Errorf("native binary not found (looked in %s)", strings.Join(candidates, ", "))
}
