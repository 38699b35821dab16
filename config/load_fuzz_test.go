package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzLoadYAML loads any file. Load must not panic, and a refusal must be
// made only of *Error values (what main maps to exit code 2), each naming
// the key it is about, except the one that says the file is unreadable.
func FuzzLoadYAML(f *testing.F) {
	for _, seed := range []string{
		"", "log:\n  level: debug\n", "telegram:\ndiscord:\n", "lanes: {}\n", "log: [1, 2]\n",
		"api:\n  listen: 0.0.0.0:8787\n", "codex:\n  args: [-c, x=1]\n", "projects:\n  web: /srv/web\n",
		"lanes:\n  rotate: daily@04:00\n  compact_at: 0.8\n", "files:\n  max_bytes: 20MiB\n",
		"\t- : :\n", "a: &x [*x]\n", "log:\n  level: {a: b}\n", "telegram:\n  token: [x]\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		dir := isolate(t)
		file := filepath.Join(dir, "gw.yaml")
		if err := os.WriteFile(file, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := Load(Options{File: file, Env: os.Environ()})
		if err == nil {
			if cfg == nil {
				t.Fatal("Load returned neither a config nor an error")
			}
			return
		}
		checkConfigErrors(t, err, func(e *Error) bool { return strings.HasPrefix(e.Msg, "read ") })
	})
}

// FuzzLoadEnv sets one GATEWAYD_* variable to any value. A refusal must be
// *Error values that all name a key, and a secret's value never appears in
// the message.
func FuzzLoadEnv(f *testing.F) {
	for i, v := range []string{"debug", "x", "", "-1", "1h", "0.5", "a,b", "tok-123456", "daily@25:00", "20MiB"} {
		f.Add(uint8(i), v)
	}
	f.Fuzz(func(t *testing.T, which uint8, value string) {
		if strings.ContainsRune(value, 0) {
			return // the environment cannot hold a NUL
		}
		k := keys[int(which)%len(keys)]
		dir := isolate(t)
		file := filepath.Join(dir, "empty.yaml")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv(envName(k.name), value)
		_, err := Load(Options{File: file, Env: os.Environ()})
		if err == nil {
			return
		}
		checkConfigErrors(t, err, func(*Error) bool { return false })
		if k.secret && len(value) >= 6 && strings.Contains(err.Error(), value) {
			t.Fatalf("%s=%q: the secret is in the error %q", envName(k.name), value, err)
		}
	})
}

// checkConfigErrors asserts err joins only *Error values that name a key
// (unnamed is allowed only where unnamedOK says so).
func checkConfigErrors(t *testing.T, err error, unnamedOK func(*Error) bool) {
	t.Helper()
	for _, e := range leafErrors(err) {
		var ce *Error
		if !errors.As(e, &ce) {
			t.Fatalf("error %q (%T) is not a *config.Error: it would not exit 2", e, e)
		}
		if ce.Key == "" && !unnamedOK(ce) {
			t.Fatalf("error %q names no key", ce)
		}
	}
}

func leafErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, leafErrors(e)...)
		}
		return out
	}
	return []error{err}
}

// Found by FuzzLoadYAML: a YAML key that reads as empty was refused with
// "config: unknown key", naming nothing.
func TestEmptyKeyIsNamed(t *testing.T) {
	dir := isolate(t)
	_, err := Load(Options{File: writeFile(t, dir, "gw.yaml", "!0 : "), Env: os.Environ()})
	var ce *Error
	if !errors.As(err, &ce) || ce.Key == "" {
		t.Fatalf("Load: %v, want a *config.Error naming the key", err)
	}
	if want := `config: "": unknown key`; !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("error %q, want prefix %q", err, want)
	}
}
