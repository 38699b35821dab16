package gateway_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/api"
)

// withTools gives the world's CODEX_HOME two MCP servers, "tiny" (the
// shell MCP server of testdata, one tool) and "broken" (exits at once),
// and a skill of the user's, "greet-user".
func withTools(t *testing.T, w *world) {
	t.Helper()
	script, err := filepath.Abs("testdata/mcp-tiny.sh")
	if err != nil {
		t.Fatal(err)
	}
	config := "[mcp_servers.tiny]\ncommand = \"/bin/sh\"\nargs = [" + quoteTOML(script) + "]\n\n" +
		"[mcp_servers.broken]\ncommand = \"/bin/sh\"\nargs = [\"-c\", \"exit 3\"]\n"
	skill := "---\nname: greet-user\ndescription: Greets the user warmly by name.\n---\nSay hello by name.\n"
	dir := filepath.Join(w.home, "skills", "greet-user")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for path, data := range map[string]string{filepath.Join(w.home, "config.toml"): config, filepath.Join(dir, "SKILL.md"): skill} {
		if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

func quoteTOML(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// TestIntegrationMCPAndSkillsListWhatCodexHomeConfigures: through the
// real app-server, /mcp lists the servers of CODEX_HOME's config.toml,
// first as codex checks them (no thread yet), then as the lane's loaded
// thread connected them (tiny connected with its tool, broken failed);
// /mcp reload answers an admin; /skills lists the skill of
// CODEX_HOME/skills.
func TestIntegrationMCPAndSkillsListWhatCodexHomeConfigures(t *testing.T) {
	w := newWorld(t)
	withTools(t, w)
	gw := w.start(t, gateway.Config{Admins: map[string][]string{api.PlatformName: {"tester"}}})

	before := gw.ask(t, "alpha", "/mcp").Reply
	for _, want := range []string{"MCP servers Codex is configured with (2;", "• tiny — reachable, 1 tool", "• broken — failed"} {
		if !strings.Contains(before, want) {
			t.Errorf("/mcp before any turn answered %q, want %q in it", before, want)
		}
	}

	gw.ask(t, "alpha", "hello")
	after := gw.ask(t, "alpha", "/mcp").Reply
	for _, want := range []string{"MCP servers of this conversation's Codex thread (2):", "• tiny — connected, 1 tool", "• broken — failed"} {
		if !strings.Contains(after, want) {
			t.Errorf("/mcp after a turn answered %q, want %q in it", after, want)
		}
	}

	if r := gw.ask(t, "alpha", "/mcp reload").Reply; !strings.HasPrefix(r, "Codex read its MCP server configuration again") {
		t.Errorf("/mcp reload by an admin answered %q", r)
	}

	skills := gw.ask(t, "alpha", "/skills").Reply
	t.Logf("/mcp before a turn:\n%s\n/mcp after:\n%s\n/skills:\n%s", before, after, skills)
	for _, want := range []string{"Skills Codex offers in " + w.dir + " (1):", "• greet-user — Greets the user warmly by name.", "Codex's own: "} {
		if !strings.Contains(skills, want) {
			t.Errorf("/skills answered %q, want %q in it", skills, want)
		}
	}
}
