package codex

import "testing"

func TestServerVersionFromTheUserAgent(t *testing.T) {
	tests := []struct{ name, ua, want string }{
		{"the real shape", "gatewayd/0.169.0 (Debian 12.0.0; x86_64) xterm (gatewayd; dev)", "0.169.0"},
		{"no platform part", "fake/0.169.0", "0.169.0"},
		{"no version", "codex", ""},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Client
			ua := tt.ua
			c.userAgent.Store(&ua)
			if got := c.ServerVersion(); got != tt.want {
				t.Errorf("ServerVersion() of %q = %q, want %q", tt.ua, got, tt.want)
			}
		})
	}
	var before Client
	if before.UserAgent() != "" || before.ServerVersion() != "" {
		t.Error("a client before its handshake reports a version")
	}
}

// The fake app-server's handshake is recorded, and a restart's handshake
// replaces it (the restarted binary may be another version).
func TestServerVersionAfterARestart(t *testing.T) {
	t.Parallel()
	c := startFake(t, fakeConfig{})
	if got := c.ServerVersion(); got != "0.169.0" {
		t.Fatalf("ServerVersion() = %q (user agent %q), want the fake's 0.169.0", got, c.UserAgent())
	}
	stale := "old/0.1.0"
	c.userAgent.Store(&stale)
	first := c.conn(t)
	first.proc.kill()
	c.waitRestart(t, first)
	if got := c.ServerVersion(); got != "0.169.0" {
		t.Errorf("ServerVersion() after a restart = %q, want the new handshake's", got)
	}
}
