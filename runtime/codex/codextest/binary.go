// Package codextest is test support for code that drives the real codex
// app-server: it finds the pinned codex binary, runs a fake OpenAI Responses
// API server on 127.0.0.1 that codex 0.169.0 accepts, and builds the offline
// command-line overrides that point codex at that fake.
//
// Typical use:
//
//	m := codextest.NewModel(t)
//	m.Respond(func(req codextest.Request) codextest.Reply { … }) // optional
//	cmd := exec.Command(codextest.CodexBinary(t), append([]string{"app-server"}, codextest.Args(m.URL)...)...)
//	cmd.Env = append(append(os.Environ(), "CODEX_HOME="+codextest.Home(t)), codextest.Env()...)
//	… run turns, then inspect m.Requests() / m.WaitRequests(ctx, n).
//
// The wire formats reproduced here are recorded in the team's
// codex-app-server.md (§7 text replies, §10.2 tool calls, §6 compaction).
package codextest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/gatewayd/gatewayd/internal/processtest"
)

// BinaryEnv names the environment variable that overrides the codex binary.
const BinaryEnv = "GATEWAYD_CODEX_BIN"

// vendoredBinary is the native codex binary installed by `npm ci --prefix tools`,
// relative to the repository root.
const vendoredBinary = "tools/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex"

const installHint = "install it with `npm ci --prefix tools` from the repository root, or set " + BinaryEnv

// CodexBinary returns the path of the real codex binary: $GATEWAYD_CODEX_BIN
// when set, else the vendored binary under the repository root. When it is
// missing the test fails under CI=true (integration tests must run there) and
// is skipped elsewhere, with a message saying how to install it. Under
// `go test -short` (make check) a test that got this far is skipped too: it
// is a process test, and make test runs it.
func CodexBinary(t testing.TB) string {
	t.Helper()
	path, err := findBinary()
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("codextest: codex binary not found: %v; %s", err, installHint)
		}
		t.Skipf("codextest: codex binary not found: %v; %s", err, installHint)
		return ""
	}
	processtest.SkipWhenShort(t, "runs the real codex")
	return path
}

func findBinary() (string, error) {
	if path := os.Getenv(BinaryEnv); path != "" {
		if err := checkExecutable(path); err != nil {
			return "", err
		}
		return path, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	path := filepath.Join(root, vendoredBinary)
	if err := checkExecutable(path); err != nil {
		return "", err
	}
	return path, nil
}

func checkExecutable(path string) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		return errors.New(path + " is not an executable file")
	}
	return nil
}

// repoRoot walks up from the working directory (a test's package directory)
// to the directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
