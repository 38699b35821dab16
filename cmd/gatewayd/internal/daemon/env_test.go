package daemon

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The app-server runs the agent's commands: it must not inherit the bot and
// API tokens, nor systemd's notify socket.
func TestChildEnvBlanksSecretsAndNotifySocket(t *testing.T) {
	parent := []string{"PATH=/bin", "GATEWAYD_TELEGRAM_TOKEN=123:secret", "GATEWAYD_API_TOKEN=s3cret",
		"NOTIFY_SOCKET=/run/systemd/notify", "HOME=/var/lib/gatewayd"}
	// exec keeps the last of duplicate names, which is how the overrides win.
	cmd := exec.Command("/usr/bin/env")
	cmd.Env = append(slices.Clone(parent), ChildEnv(parent)...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("env: %v", err)
	}
	got := string(out)
	for _, leaked := range []string{"123:secret", "s3cret", "/run/systemd/notify"} {
		if strings.Contains(got, leaked) {
			t.Errorf("the child sees %q:\n%s", leaked, got)
		}
	}
	for _, kept := range []string{"PATH=/bin", "HOME=/var/lib/gatewayd"} {
		if !strings.Contains(got, kept) {
			t.Errorf("the child lost %q:\n%s", kept, got)
		}
	}
}
