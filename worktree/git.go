// Package worktree gives each lane working on a git project a checkout of
// its own: a git worktree on a branch of its own, snapshots of its files
// before each turn (to undo the turn) and its changes since it began (to
// show them). Everything is plain git run as a child process, so what the
// lane sees is what `git` in a terminal sees, and nothing here holds state
// that git does not: a restart finds the worktree, its branch, its base and
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
)

// ErrNotRepo is returned for a project directory that is not inside a git
// repository with at least one commit: the lane then works in the
// directory itself.
var ErrNotRepo = errors.New("worktree: not a git repository with a commit")

// gitEnv fixes what git must not take from the daemon's environment: a
// committer for snapshots (the service user has none), no pager or prompt,
// and no locale-dependent output to parse.
var gitEnv = []string{
	"GIT_AUTHOR_NAME=gatewayd", "GIT_AUTHOR_EMAIL=gatewayd@localhost",
	"GIT_COMMITTER_NAME=gatewayd", "GIT_COMMITTER_EMAIL=gatewayd@localhost",
	"GIT_TERMINAL_PROMPT=0", "GIT_PAGER=cat", "LC_ALL=C",
}

// git runs git in dir with extra environment and returns its standard
// output, trimmed of the final newline. A failure carries git's own words.
func git(ctx context.Context, dir string, env []string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(append(os.Environ(), gitEnv...), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errOut.String())
		if msg == "" {
			msg = err.Error()
		}
		return "", fmt.Errorf("worktree: git %s: %s", args[0], firstLine(msg))
	}
	return strings.TrimSuffix(out.String(), "\n"), nil
}

// gitOK runs git and reports only whether it succeeded (a query whose
// failure is an answer: a ref that does not exist).
func gitOK(ctx context.Context, dir string, args ...string) bool {
	_, err := git(ctx, dir, nil, args...)
	return err == nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// gitStdin runs git in dir with input on its standard input.
func gitStdin(ctx context.Context, dir, input string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), gitEnv...)
	cmd.Stdin = strings.NewReader(input)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("worktree: git %s: %s", args[0], firstLine(strings.TrimSpace(errOut.String()+" "+err.Error())))
	}
	return nil
}
