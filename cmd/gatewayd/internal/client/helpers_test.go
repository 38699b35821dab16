package client

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
)

// runCLI runs one of the package's commands as gatewayd would: its exit
// code, and what it printed (an error as gatewayd prints it).
func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	std := cli.Stdio{In: strings.NewReader(stdin), Out: &out, Err: &errb}
	commands := map[string]func(context.Context, []string, cli.Stdio) error{
		"send": Send, "sessions": Sessions, "chat": Chat, "cluster": Cluster, "worktrees": Worktrees}
	run, ok := commands[args[0]]
	if !ok {
		t.Fatalf("no command %q here", args[0])
	}
	err := run(context.Background(), args[1:], std)
	if err != nil {
		fmt.Fprintf(&errb, "gatewayd: %v\n", err)
	}
	return cli.ExitCode(err), out.String(), errb.String()
}
