package codex

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

func TestResolveCommand(t *testing.T) {
	target, ok := nativeTargets[runtime.GOARCH]
	if !ok {
		t.Skipf("no native codex package for %s", runtime.GOARCH)
	}
	root := t.TempDir()
	modules := filepath.Join(root, "node_modules")
	launcher := filepath.Join(modules, "@openai", "codex", "bin", "codex.js")
	native := filepath.Join(modules, "@openai", target.pkg, "vendor", target.triple, "bin", "codex")
	shim := filepath.Join(root, "codex-shim")
	writeFile(t, launcher, "#!/usr/bin/env node\n// launcher\n")
	writeFile(t, native, "\x7fELF native")
	writeFile(t, shim, "#!/usr/bin/env node\nimport './x.js'\n")
	link := filepath.Join(modules, ".bin", "codex")
	mustMkdir(t, filepath.Dir(link))
	if err := os.Symlink("../@openai/codex/bin/codex.js", link); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		command string
		want    string
		wantErr bool
	}{
		{name: "native binary as is", command: native, want: native},
		{name: "launcher script", command: launcher, want: native},
		{name: "symlink to launcher", command: link, want: native},
		{name: "node shebang without a package", command: shim, wantErr: true},
		{name: "missing", command: filepath.Join(root, "nope"), wantErr: true},
		{name: "empty", command: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveCommand(tt.command)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("ResolveCommand(%q) = %q, %v; want %q (error %v)", tt.command, got, err, tt.want, tt.wantErr)
			}
		})
	}
}

// The default command is the bundled codex when it is installed (and
// executable), else codex on PATH; another name never is the bundled one.
func TestResolveCommandPrefersTheBundledCodex(t *testing.T) {
	dir := t.TempDir()
	onPath := filepath.Join(dir, "path", "codex")
	writeFile(t, onPath, "\x7fELF on PATH")
	if err := os.Chmod(onPath, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", filepath.Dir(onPath))
	bundled := filepath.Join(dir, "usr", "lib", "gatewayd", "codex", "bin", "codex")
	old := BundledCommand
	BundledCommand = bundled
	t.Cleanup(func() { BundledCommand = old })

	resolve := func(when, command, want string) {
		t.Helper()
		if got, err := ResolveCommand(command); err != nil || got != want {
			t.Errorf("%s: ResolveCommand(%q) = %q, %v; want %q", when, command, got, err, want)
		}
	}
	resolve("no bundle", DefaultCommand, onPath)
	writeFile(t, bundled, "\x7fELF bundled")
	if err := os.Chmod(bundled, 0o644); err != nil {
		t.Fatal(err)
	}
	resolve("a bundle that is not executable", DefaultCommand, onPath)
	if err := os.Chmod(bundled, 0o755); err != nil {
		t.Fatal(err)
	}
	resolve("a bundle", DefaultCommand, bundled)
	resolve("an explicit path", onPath, onPath)
}

func TestResolveCommandRealLauncher(t *testing.T) {
	launcher, err := filepath.Abs("../../tools/node_modules/.bin/codex")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(launcher); err != nil {
		t.Skipf("npm launcher not installed (npm ci --prefix tools): %v", err)
	}
	got, err := ResolveCommand(launcher)
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Base(got) != "codex" || isNodeLauncher(got) {
		t.Errorf("ResolveCommand(launcher) = %s, want the native binary", got)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	mustMkdir(t, filepath.Dir(path))
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustMkdir(t *testing.T, dir string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
}

func TestRPCErrorIs(t *testing.T) {
	tests := []struct {
		message string
		want    error
	}{
		{"no rollout found for thread id 0199", ErrThreadLost},
		{"invalid session id: invalid length", ErrThreadLost},
		{"session x is archived. Run `codex unarchive x` to unarchive it first.", ErrThreadLost},
		{"thread x already has an active writer", ErrStaleWriter},
		{"thread 01a2483d-c3a9-7263-a7f9-b917568279e0 already has an active writer", ErrStaleWriter}, // 0.171.0, verbatim
		{"thread not found: x", ErrThreadNotLoaded},
		{"no active turn to interrupt", ErrNoActiveTurn},
		{"no active turn to steer", ErrNoActiveTurn},
		{"expected active turn id `01a22ca4-0000-7000-8000-000000000000` but found `01a22ca4-c565-7822-98a2-15491f3b1222`", ErrTurnMismatch},
		{"Not initialized", nil},
	}
	all := []error{ErrThreadLost, ErrStaleWriter, ErrThreadNotLoaded, ErrNoActiveTurn, ErrTurnMismatch, ErrProcessDied, ErrTimeout, ErrClosed}
	for _, tt := range tests {
		t.Run(tt.message, func(t *testing.T) {
			err := fmt.Errorf("wrapped: %w", &RPCError{Method: "m", Code: -32600, Message: tt.message})
			for _, target := range all {
				if got := errors.Is(err, target); got != (target == tt.want) {
					t.Errorf("errors.Is(%q, %v) = %v", tt.message, target, got)
				}
			}
		})
	}
}

func TestDrainStderrStripsANSI(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	core, logs := observer.New(zapcore.DebugLevel)
	go func() {
		_, _ = w.WriteString("\x1b[2m2026-11-30\x1b[0m \x1b[33mWARN\x1b[0m codex: something\n\nlast line without newline")
		_ = w.Close()
	}()
	drainStderr(r, zap.New(core)) // returns at EOF
	var got []string
	for _, e := range logs.FilterMessage("codex.stderr").All() {
		got = append(got, e.ContextMap()["line"].(string))
	}
	want := []string{"2026-11-30 WARN codex: something", "last line without newline"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("logged %q, want %q", got, want)
	}
}
