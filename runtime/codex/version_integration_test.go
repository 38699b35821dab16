package codex_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// The real app-server's initialize answer names its version, and it is the
// version the binary itself prints (`codex --version`: "codex-cli 0.169.0").
func TestIntegrationServerVersionIsTheBinarysVersion(t *testing.T) {
	t.Parallel()
	m := codextest.NewModel(t)
	c := startClient(t, m, codextest.Home(t))
	out, err := exec.Command(codextest.CodexBinary(t), "--version").Output()
	if err != nil {
		t.Fatalf("codex --version: %v", err)
	}
	fields := strings.Fields(string(out))
	want := fields[len(fields)-1]
	if got := c.ServerVersion(); got != want {
		t.Errorf("ServerVersion() = %q (userAgent %q), want %q", got, c.UserAgent(), want)
	}
	if ua := c.UserAgent(); !strings.HasPrefix(ua, "gatewayd-test/"+want) {
		t.Errorf("UserAgent() = %q, want it to start with the client name and version", ua)
	}
}
