package gatewaytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// GitRepo makes a git repository with one commit (a README) in a temp
// directory and returns it: a project for the worktree tests.
func GitRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "README"), []byte("project\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "-A"}, {"commit", "-q", "-m", "initial"}} {
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@localhost", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@localhost")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// RunsCommand is a model that answers a message containing marker with one
// exec_command of command, and everything else (the call's follow-up
// included) as codextest.DefaultReply does.
func RunsCommand(marker, command string) func(codextest.Request) codextest.Reply {
	return answersWith(marker, codextest.ExecCommand("call_"+strings.Fields(command)[0], command))
}

// AsksUser scripts a model that, to a message containing marker, asks qs
// with request_user_input (Plan mode's tool) and answers its follow-up
// with "TOOL OUTPUT: <the answers as codex gave them>".
func AsksUser(marker string, qs ...codextest.AskedQuestion) func(codextest.Request) codextest.Reply {
	return answersWith(marker, codextest.AskUser("call_ask", qs...))
}

func answersWith(marker string, call *codextest.ToolCall) func(codextest.Request) codextest.Reply {
	return func(req codextest.Request) codextest.Reply {
		if _, followUp := req.ToolOutput(); !followUp && strings.Contains(req.LastUserText(), marker) {
			return codextest.Reply{ToolCall: call}
		}
		return codextest.DefaultReply(req)
	}
}
