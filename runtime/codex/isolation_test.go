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

// codex's own AGENTS.md discovery is off under the profile (each file a
// sandboxed helper process), and the skills lookup does not walk up.
func TestIsolationArgsTurnOffCodexDiscovery(t *testing.T) {
	args := strings.Join(IsolationArgs("/opt/codex", true, nil, nil), " ")
	for _, want := range []string{"-c project_doc_max_bytes=0", "-c project_root_markers=[]"} {
		if !strings.Contains(args, want) {
			t.Errorf("IsolationArgs lacks %q: %s", want, args)
		}
	}
}

// A confined thread gets its working directory's AGENTS.md after any
// developer instructions it had; a cwd that is not one of the lane's
// roots is not read.
func TestConfinementSendsTheLanesAgentsMD(t *testing.T) {
	work, other := t.TempDir(), t.TempDir()
	write(t, filepath.Join(work, "AGENTS.md"), "LANE-DOC")
	write(t, filepath.Join(other, "AGENTS.md"), "OTHER-DOC")
	conf := Confinement{Profile: LaneProfile, Roots: []string{work}}
	tests := []struct {
		name string
		cfg  ThreadConfig
		want string
	}{
		{"lane's cwd", ThreadConfig{Cwd: work, Confine: conf}, "# AGENTS.md instructions for " + work + "\n\n<INSTRUCTIONS>\nLANE-DOC\n</INSTRUCTIONS>"},
		{"after its own", ThreadConfig{Cwd: work, DeveloperInstructions: "OWN", Confine: conf}, "OWN\n\n# AGENTS.md instructions for " + work},
		{"cwd not a root", ThreadConfig{Cwd: other, Confine: conf}, ""},
		{"not confined", ThreadConfig{Cwd: work}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := tt.cfg.startParams()["developerInstructions"].(string)
			if tt.want == "" && got != "" || !strings.HasPrefix(got, tt.want) {
				t.Errorf("developerInstructions = %q, want %q", got, tt.want)
			}
		})
	}
}
