package codex

import (
	"strings"
	"testing"
)

// Only paths the profile would otherwise grant are denied: bubblewrap
// cannot mask a path whose parent is not mounted, and a command under
// such a profile would fail to start.
func TestIsolationArgsDenyOnlyWhatIsGranted(t *testing.T) {
	args := IsolationArgs("/opt/codex/vendor", true, []string{
		"/etc/gatewayd", "/var/lib/gatewayd", "/etcetera/x", "/usr/local/var/gatewayd/", "/opt/codex/vendor/secret", "/etc",
	})
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
	if !strings.Contains(fs, `":workspace_roots"={"."="write", ".git"="write"}`) {
		t.Errorf("workspace roots not writable: %s", fs)
	}
	if ro := IsolationArgs("/opt/codex", false, nil)[1]; !strings.Contains(ro, `"."="read"`) {
		t.Errorf("read-only sandbox: %s", ro)
	}
}
