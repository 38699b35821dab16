// Package worktree gives each lane working on a git project a checkout of
// its own: a repository of its own beside the project's (its objects
// borrowed from the project's through git's alternates, never written
// there), on a branch of its own, snapshots of its files before each turn
// (to undo the turn) and its changes since it began (to show them).
//
// A lane's commands are hostile: they run whatever a web page told the
// model. So nothing here executes or trusts what a lane can write. Each
// lane's git directory is <worktree>/.git, which codex's sandbox mounts
// read-only for the lane's commands (the lane profile's ".git" = "read"),
// and every git this package runs names its git directory and work tree
// explicitly — never discovered from a .git a lane could have replaced —
// with hooks, fsmonitor, system and global config off and an environment
// that carries none of the daemon's (no tokens, no GATEWAYD_*). Everything
// is plain git, so a restart finds the worktree, its branch, its base and
// its snapshots where git keeps them.
package worktree

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"time"
)

// ErrNotRepo is returned for a project directory that is not inside a git
// repository with at least one commit: the lane then works in the
// directory itself.
var ErrNotRepo = errors.New("worktree: not a git repository with a commit")

// gitEnv fixes what git must not take from anywhere else: a committer for
// snapshots (the service user has none), no pager or prompt, no
// locale-dependent output to parse, no system or global config (only the
// repository's own, which a lane cannot write), no replace refs, and a
// HOME with nothing in it (git reads ~/.config/git/{ignore,attributes}).
var gitEnv = []string{
	"GIT_AUTHOR_NAME=gatewayd", "GIT_AUTHOR_EMAIL=gatewayd@localhost",
	"GIT_COMMITTER_NAME=gatewayd", "GIT_COMMITTER_EMAIL=gatewayd@localhost",
	"GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "PAGER=cat", "LC_ALL=C",
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=" + os.DevNull,
	"GIT_NO_REPLACE_OBJECTS=1", "GIT_ATTR_NOSYSTEM=1", "GIT_GRAFT_FILE=" + os.DevNull,
	"HOME=" + os.DevNull, "XDG_CONFIG_HOME=" + os.DevNull,
}

// gitSafety are "-c" overrides that win over any config file: whatever a
// repository's config says, git runs no hook, no fsmonitor, no external
// diff or textconv, no signing program, no pager or editor, no transport
// but the local one, and does not recurse into nested repositories (whose
// own config a lane could write).
var gitSafety = []string{
	"-c", "core.hooksPath=" + os.DevNull,
	"-c", "core.fsmonitor=false",
	"-c", "core.attributesFile=" + os.DevNull,
	"-c", "core.excludesFile=" + os.DevNull,
	"-c", "core.pager=cat", "-c", "core.editor=false",
	"-c", "core.sshCommand=false", "-c", "core.askPass=",
	"-c", "credential.helper=",
	"-c", "commit.gpgSign=false", "-c", "tag.gpgSign=false",
	"-c", "diff.external=", "-c", "submodule.recurse=false",
	"-c", "diff.ignoreSubmodules=all", "-c", "status.submoduleSummary=false",
	"-c", "protocol.allow=never", "-c", "protocol.file.allow=always",
	"-c", "uploadpack.packObjectsHook=",
	"-c", "gc.auto=0", "-c", "maintenance.auto=false", "-c", "advice.graftFileDeprecated=false",
}

// baseEnv is what every git gets from the daemon's environment: PATH,
// to find git and what git runs of its own (the daemon's PATH, which no
// lane can write), and nothing else: no bot token, no API key, no
// GATEWAYD_* variable reaches it.
func baseEnv() []string {
	env := make([]string, 0, len(gitEnv)+2)
	if p, ok := os.LookupEnv("PATH"); ok {
		env = append(env, "PATH="+p)
	}
	return append(env, gitEnv...)
}

// gitTimeout bounds one git the daemon runs, unless its caller's context
// ends sooner: a lane can make git wait forever (a FIFO named .gitignore),
// and a wedged git must not wedge the lane's queue with it. Making and
// forking a worktree of a large project checks out every file and gets
// longer (checkoutTimeout).
var (
	gitTimeout      = 2 * time.Minute
	checkoutTimeout = 15 * time.Minute
)

// gitRuns counts the gits run on repositories, for tests that prove a
// snapshot needed none (or one).
var gitRuns atomic.Int64

// repoDirs is where git runs: a git directory and its work tree, both
// named by the daemon. workTree is "" for commands that read only the
// repository. overrides are further "-c" settings for this repository
// (the project's: its own filters neutralised, safe.directory), and
// timeout replaces gitTimeout when set.
type repoDirs struct {
	gitDir, workTree string
	overrides        []string
	timeout          time.Duration
	// nice runs git at the lowest CPU priority: the pool's checkouts are
	// background work and must not slow the turns running beside them.
	nice bool
}

// long is d for checking out a whole tree.
func (r repoDirs) long() repoDirs { r.timeout = checkoutTimeout; return r }

// command builds git for r with extra environment: the directory names
// come first, so nothing in the current directory or above it is
// consulted.
func (r repoDirs) command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	full := make([]string, 0, len(gitSafety)+len(r.overrides)+len(args)+3)
	full = append(full, "--git-dir="+r.gitDir)
	if r.workTree != "" {
		full = append(full, "--work-tree="+r.workTree)
	}
	full = append(append(append(full, gitSafety...), r.overrides...), args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = append(baseEnv(), env...)
	// A git killed at its deadline may leave a child holding the pipes.
	cmd.WaitDelay = 5 * time.Second
	// The daemon's working directory: not the lane's, so no relative path
	// git resolves lands in a directory the lane chose.
	cmd.Dir = os.TempDir()
	if r.workTree != "" {
		cmd.Dir = r.workTree
	}
	return cmd
}

// git runs git in r with extra environment and returns its standard
// output, trimmed of the final newline. A failure carries git's own words.
func (r repoDirs) git(ctx context.Context, env []string, args ...string) (string, error) {
	return r.gitIn(ctx, env, "", args...)
}

// gitIn is git with input on its standard input.
func (r repoDirs) gitIn(ctx context.Context, env []string, input string, args ...string) (string, error) {
	out, _, err := r.run(ctx, env, input, 0, args...)
	return out, err
}

// run is git with input, its output kept up to limit bytes (0: all);
// truncated says output was dropped past the limit.
func (r repoDirs) run(ctx context.Context, env []string, input string, limit int, args ...string) (out string, truncated bool, err error) {
	gitRuns.Add(1)
	timeout := r.timeout
	if timeout == 0 {
		timeout = gitTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := r.command(ctx, env, args...)
	if input != "" {
		cmd.Stdin = strings.NewReader(input)
	}
	stdout := &cappedBuffer{limit: limit}
	var errOut cappedBuffer
	errOut.limit = 64 << 10
	cmd.Stdout, cmd.Stderr = stdout, &errOut
	if err := r.start(cmd); err != nil {
		msg := strings.TrimSpace(errOut.String())
		if ctx.Err() != nil {
			msg = fmt.Sprintf("did not finish within %s", timeout)
		} else if msg == "" {
			msg = err.Error()
		}
		return "", false, &gitError{command: subcommand(args), stderr: msg}
	}
	return strings.TrimSuffix(stdout.String(), "\n"), stdout.dropped, nil
}

// subcommand is the git command args run, past any "-c" settings.
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		if args[i] == "-c" {
			i++
			continue
		}
		return args[i]
	}
	return "git"
}

// gitError is a git that failed: its first line of complaint in Error,
// all of it kept for the callers that must tell one failure from another.
type gitError struct{ command, stderr string }

func (e *gitError) Error() string {
	return fmt.Sprintf("worktree: git %s: %s", e.command, firstLine(e.stderr))
}

// start runs cmd to its end, at low priority when r is nice.
func (r repoDirs) start(cmd *exec.Cmd) error {
	if !r.nice {
		return cmd.Run()
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	lowerPriority(cmd.Process.Pid)
	return cmd.Wait()
}

// cappedBuffer keeps at most limit bytes (0: no limit) of what is written
// to it and says whether it dropped any: a lane's diff can be as large as
// the files it writes, and the daemon must not hold it all.
//
// The buffer is a field, not embedded: an embedded bytes.Buffer's ReadFrom
// would let io.Copy write past the limit.
type cappedBuffer struct {
	buf     bytes.Buffer
	limit   int
	dropped bool
}

func (b *cappedBuffer) Write(p []byte) (int, error) {
	if b.limit > 0 && b.buf.Len()+len(p) > b.limit {
		b.dropped = true
		if room := b.limit - b.buf.Len(); room > 0 {
			b.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return b.buf.Write(p)
}

func (b *cappedBuffer) String() string { return b.buf.String() }

// ok runs git and reports only whether it succeeded (a query whose
// failure is an answer: a ref that does not exist).
func (r repoDirs) ok(ctx context.Context, args ...string) bool {
	_, err := r.git(ctx, nil, args...)
	return err == nil
}

// discover finds the repository a project directory is in. The project is
// the operator's (its path comes from the configuration and no lane can
// write its .git), so this is the one place git is allowed to look for a
// repository — still with hooks, fsmonitor and the daemon's environment
// kept out.
//
// The operator configured the project, so it is trusted whoever owns it
// (safe.directory, which the daemon's environment no longer takes from
// the operator's global config). "Not a repository" is ErrNotRepo; any
// other failure is an error, so a lane never falls back to working in the
// checkout because git could not answer.
func discover(ctx context.Context, dir string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, gitTimeout)
	defer cancel()
	full := append(append(append([]string{"-C", dir}, gitSafety...), trustProject...), args...)
	cmd := exec.CommandContext(ctx, "git", full...)
	cmd.Env = baseEnv()
	cmd.WaitDelay = 5 * time.Second
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errOut.String())
		if strings.Contains(msg, "not a git repository") {
			return "", fmt.Errorf("%w: %s", ErrNotRepo, dir)
		}
		return "", fmt.Errorf("worktree: git %s in %s: %s", args[0], dir, firstLine(strings.TrimSpace(msg+" "+err.Error())))
	}
	return strings.TrimSuffix(out.String(), "\n"), nil
}

// trustProject lets git work in a project owned by another user.
var trustProject = []string{"-c", "safe.directory=*"}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
