package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/cli"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/doctor"
	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/internal/processtest"
)

// cleanEnv keeps the host's GATEWAYD_* and state variables out of a test.
func cleanEnv(t *testing.T) string { return processtest.CleanEnv(t) }

func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = Run(context.Background(), args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestCheckConfig(t *testing.T) {
	const secret = "123:SECRET-telegram-token"
	tests := []struct {
		name     string
		file     string
		env      map[string]string
		wantCode int
		wantOut  []string
		wantErr  string
	}{
		{"defaults", "", nil, 0, []string{`api.listen: "127.0.0.1:8787"`, "codex.turn_timeout: 30m0s"}, ""},
		{"secret redacted", "telegram:\n  token: " + secret + "\n  allowed_users: [1]\n", nil, 0,
			[]string{"telegram.token: [redacted]"}, ""},
		{"bad duration", "codex:\n  turn_timeout: abc\n", nil, 2, nil,
			`config: codex.turn_timeout: invalid duration "abc"`},
		{"unknown key", "lanes:\n  max_lives: 3\n", nil, 2, nil, "config: lanes.max_lives: unknown key"},
		{"unknown env", "", map[string]string{"GATEWAYD_API_LISTEN_ADDR": "x"}, 2, nil,
			"config: GATEWAYD_API_LISTEN_ADDR: environment variable names no configuration key"},
		{"secret not in error", "telegram:\n  token: " + secret + "\n", nil, 2, nil,
			"config: telegram.allowed_users: required when telegram.token is set"},
		{"codex missing", "codex:\n  command: /nonexistent/codex\n", nil, 2, nil,
			`config: codex.command: "/nonexistent/codex" does not exist`},
		{"busy mode interrupt", "lanes:\n  busy_mode: interrupt\n", nil, 0, []string{"lanes.busy_mode: \"interrupt\""}, ""},
		{"busy mode steer", "lanes:\n  busy_mode: steer\n  compact_at: 0.8\n  rotate: daily@04\n", nil, 0,
			[]string{"lanes.busy_mode: \"steer\"", "lanes.compact_at: 0.8", "lanes.rotate: \"daily@04:00\""}, ""},
		{"busy mode unknown", "lanes:\n  busy_mode: shout\n", nil, 2, nil, "config: lanes.busy_mode"},
		{"verbose unknown", "lanes:\n  verbose: chatty\n", nil, 2, nil, "config: lanes.verbose"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := cleanEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			file := filepath.Join(dir, "gw.yaml")
			if err := os.WriteFile(file, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(tc.file, "command:") {
				t.Setenv("GATEWAYD_CODEX_COMMAND", "/bin/true") // codex need not be installed here
			}
			code, out, errOut := runCLI(t, "", "check-config", "--config", file)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.wantCode, errOut)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w+"\n") {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			if !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("stderr %q lacks %q", errOut, tc.wantErr)
			}
			if strings.Contains(out+errOut, secret) {
				t.Errorf("the secret leaked:\n%s\n%s", out, errOut)
			}
		})
	}
}

func TestUsageAndVersion(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string
		wantErr  string
	}{
		{"version", []string{"version"}, 0, "gatewayd ", ""},
		{"help", []string{"help"}, 0, "Exit codes:", ""},
		{"unknown command", []string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{"unknown flag", []string{"run", "--nope"}, 2, "", "flag provided but not defined: -nope"},
		{"run extra arg", []string{"run", "x"}, 2, "", `run takes no arguments`},
		{"check-config arg", []string{"check-config", "x"}, 2, "", "check-config takes no arguments"},
		{"sessions no sub", []string{"sessions"}, 2, "", "sessions needs a subcommand"},
		{"sessions bad sub", []string{"sessions", "drop"}, 2, "", `unknown sessions subcommand "drop"`},
		{"sessions show no key", []string{"sessions", "show"}, 2, "", "sessions show takes 1 argument(s), got 0"},
		{"chat two lanes", []string{"chat", "a", "b"}, 2, "", "chat takes at most one lane name"},
		{"send no lane", []string{"send", "--json"}, 2, "", "send needs a lane name"},
		{"send bad lane", []string{"send", "a/b", "hi"}, 2, "", `send: bad lane name "a/b"`},
		{"send empty stdin", []string{"send", "web"}, 2, "", "send: the text is empty"},
		{"send blank text", []string{"send", "web", " ", ""}, 2, "", "send: the text is empty"},
		{"send bad flag", []string{"send", "web", "hi", "--nope"}, 2, "", "flag provided but not defined: -nope"},
		{"missing config file", []string{"run", "--config", "/nonexistent/gw.yaml"}, 2, "", "config: read /nonexistent/gw.yaml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cleanEnv(t)
			code, out, errOut := runCLI(t, "", tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tc.wantCode, errOut)
			}
			if !strings.Contains(out, tc.wantOut) {
				t.Errorf("stdout %q lacks %q", out, tc.wantOut)
			}
			if !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("stderr %q lacks %q", errOut, tc.wantErr)
			}
		})
	}
}

// `gatewayd version` prints the version, the commit, the Go release and
// the pinned codex release, one a line.
func TestVersion(t *testing.T) {
	cleanEnv(t)
	code, out, errOut := runCLI(t, "", "version")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	want := []string{"gatewayd " + Version(), "commit: ", "go: " + runtime.Version(), "codex (pinned): " + doctor.PinnedCodexVersion}
	if len(lines) != len(want) {
		t.Fatalf("version output %q, want %d lines", out, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("line %d %q, want prefix %q", i+1, lines[i], w)
		}
	}
	if doctor.PinnedCodexVersion == "" || strings.TrimPrefix(lines[1], "commit: ") == "" {
		t.Errorf("version output %q has an empty field", out)
	}

	// A commit set at build time (-X main.commit=…) is printed as given.
	defer func(old string) { commit = old }(commit)
	commit = "0123abc"
	if _, out, _ := runCLI(t, "", "version"); !strings.Contains(out, "\ncommit: 0123abc\n") {
		t.Errorf("with main.commit set: %q", out)
	}
}

func TestRunPreflightErrorsAreConfigErrors(t *testing.T) {
	tests := []struct {
		name, file, wantErr string
	}{
		{"codex missing", "codex:\n  command: gatewayd-test-no-such-codex\n",
			`config: codex.command: "gatewayd-test-no-such-codex" not found on PATH`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := cleanEnv(t)
			file := filepath.Join(dir, "gw.yaml")
			if err := os.WriteFile(file, []byte(tc.file+"log:\n  format: console\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			code, _, errOut := runCLI(t, "", "run", "--config", file)
			if code != cli.ExitUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, cli.ExitUsage, errOut)
			}
			if !strings.Contains(errOut, tc.wantErr) {
				t.Errorf("stderr lacks %q:\n%s", tc.wantErr, errOut)
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want int
	}{
		{"success", nil, cli.ExitOK},
		{"usage", cli.Usagef("bad flag"), cli.ExitUsage},
		{"config key", fmt.Errorf("gatewayd: %w", &config.Error{Key: "api.listen", Msg: "bad"}), cli.ExitUsage},
		// The gateway passes a platform's Run error on wrapped twice.
		{"token rejected at run time", fmt.Errorf("gatewayd: %w",
			fmt.Errorf("gateway: platform telegram: %w", fmt.Errorf("telegram: getMe: token rejected: %w", gateway.ErrConfig))), cli.ExitUsage},
		{"runtime", errors.New("gatewayd: open store: disk full"), cli.ExitFailure},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cli.ExitCode(tt.err); got != tt.want {
				t.Errorf("cli.ExitCode(%v) = %d, want %d", tt.err, got, tt.want)
			}
		})
	}
}

func TestSignals(t *testing.T) {
	exited := make(chan int, 1)
	sig := watchSignals(context.Background(), zap.NewNop(), func(code int) { exited <- code })
	defer sig.stop()

	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sig.hup:
	case <-time.After(10 * time.Second):
		t.Fatal("SIGHUP did not ask for a reload")
	}
	if sig.ctx.Err() != nil {
		t.Fatal("SIGHUP cancelled the root context")
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-sig.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not cancel the root context")
	}
	select {
	case code := <-exited:
		t.Fatalf("first signal exited with %d", code)
	default:
	}

	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-exited:
		if code != cli.ExitFailure {
			t.Errorf("second signal exit code %d, want %d", code, cli.ExitFailure)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("second signal did not exit")
	}
}
