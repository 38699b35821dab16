package codex

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Only paths the profile would otherwise grant are denied: bubblewrap
// cannot mask a path whose parent is not mounted, and a command under
// such a profile would fail to start.
func TestIsolationArgsDenyOnlyWhatIsGranted(t *testing.T) {
	args := IsolationArgs("/opt/codex/vendor", true, []string{
		"/etc/gatewayd", "/var/lib/gatewayd", "/etcetera/x", "/usr/local/var/gatewayd/", "/opt/codex/vendor/secret", "/etc",
	}, []string{"/srv/app/.git/objects/", "relative/objects"})
	fs := args[1]
	for _, want := range []string{`"/etc/gatewayd"="deny"`, `"/usr/local/var/gatewayd"="deny"`, `"/opt/codex/vendor/secret"="deny"`} {
		if !strings.Contains(fs, want) {
			t.Errorf("filesystem %s lacks %s", fs, want)
		}
	}
	for _, not := range []string{"/var/lib/gatewayd", "/etcetera", `"/etc"="deny"`} {
		if strings.Contains(fs, not) {
			t.Errorf("filesystem %s names %s, which the profile does not grant", fs, not)
		}
	}
	if !strings.Contains(fs, `":workspace_roots"={"."="write", ".git"="read"}`) {
		t.Errorf("workspace roots not writable, or their .git not read-only: %s", fs)
	}
	if !strings.Contains(fs, `"/srv/app/.git/objects"="read"`) || strings.Contains(fs, "relative/objects") {
		t.Errorf("the projects' objects are not granted read-only, or a relative path is: %s", fs)
	}
	if ro := IsolationArgs("/opt/codex", false, nil, nil)[1]; !strings.Contains(ro, `"."="read"`) {
		t.Errorf("read-only sandbox: %s", ro)
	}
}

// A binary reached through a symlinked directory is granted where it
// really is: the sandbox mounts real paths.
func TestCodexDirResolvesSymlinks(t *testing.T) {
	real := t.TempDir()
	bin := filepath.Join(real, "vendor", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bin, "codex"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "node_modules")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.EvalSymlinks(filepath.Join(real, "vendor"))
	if got := CodexDir(filepath.Join(link, "vendor", "bin", "codex")); got != want {
		t.Errorf("CodexDir = %s, want %s", got, want)
	}
}
