package codextest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Fixed identities of the offline configuration.
const (
	ProviderName = "fake"
	ModelName    = "fake-model"
	APIKeyEnv    = "FAKE_API_KEY"
	APIKey       = "sk-fake-test"
	// StreamIdleTimeoutMS bounds a stream that stalls after its headers. A
	// model that never sends headers is not covered by it (docs/codex-app-server.md §8).
	StreamIdleTimeoutMS = 30000
)

// Args returns the `-c key=value` overrides (to append after "app-server")
// that run codex fully offline against the fake model at baseURL (the server
// root, e.g. Model.URL): provider "fake" without retries, approvals never,
// full-access sandbox, no update check, analytics, feedback, web search or
// plugin sync (docs/codex-app-server.md §7).
func Args(baseURL string) []string {
	provider := fmt.Sprintf(
		`model_providers.%s={name=%q, base_url=%q, wire_api="responses", env_key=%q, request_max_retries=0, stream_max_retries=0, stream_idle_timeout_ms=%d}`,
		ProviderName, ProviderName, strings.TrimRight(baseURL, "/")+"/v1", APIKeyEnv, StreamIdleTimeoutMS)
	overrides := []string{
		provider,
		"model_provider=" + ProviderName,
		fmt.Sprintf("model=%q", ModelName),
		`approval_policy="never"`,
		`sandbox_mode="danger-full-access"`,
		"check_for_update_on_startup=false",
		"analytics.enabled=false",
		"feedback.enabled=false",
		`web_search="disabled"`,
		"features.plugins=false",
		"features.remote_plugin=false",
		"features.apps=false",
		"features.tool_suggest=false",
		"features.skill_mcp_dependency_install=false",
		"features.shell_snapshot=false",
	}
	args := make([]string, 0, 2*len(overrides))
	for _, o := range overrides {
		args = append(args, "-c", o)
	}
	return args
}

// SandboxArgs is Args without the process-wide sandbox mode, for tests of
// the sandbox itself: there the thread's permissions decide, as they do
// for a user whose codex.args set no sandbox.
func SandboxArgs(baseURL string) []string {
	all := Args(baseURL)
	args := make([]string, 0, len(all))
	for i := 0; i < len(all); i += 2 {
		if !strings.HasPrefix(all[i+1], "sandbox_mode=") {
			args = append(args, all[i], all[i+1])
		}
	}
	return args
}

// EtcDir is a new directory under /etc, removed when the test ends: codex's
// sandbox lets every command read /etc, and the systemd layout keeps the
// config and environment files there, so an isolation test must put them
// there too. Without the right to write /etc (not root), it is a temporary
// directory elsewhere, and the test says so.
func EtcDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("/etc", "gatewayd-test-")
	if err != nil {
		t.Logf("config directory outside /etc (%v): the /etc case is not covered", err)
		return t.TempDir()
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

// Env returns the extra environment codex needs for the fake provider.
func Env() []string {
	return []string{APIKeyEnv + "=" + APIKey}
}

// Home returns a fresh, empty CODEX_HOME for one test. codex logs a harmless
// warning about helper binaries when it lives under /tmp.
func Home(t testing.TB) string {
	t.Helper()
	return t.TempDir()
}
