package webconsole_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/platforms/api"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/webconsole"
)

// fakeTools lists fixed MCP servers and skills, recording the skills'
// directory.
type fakeTools struct {
	servers []codex.MCPServer
	skills  []codex.Skill
	bad     []codex.SkillError
	err     error
	dirs    *[]string
}

func (f fakeTools) MCPServers(context.Context) ([]codex.MCPServer, error) { return f.servers, f.err }

func (f fakeTools) Skills(_ context.Context, dir string) ([]codex.Skill, []codex.SkillError, error) {
	*f.dirs = append(*f.dirs, dir)
	return f.skills, f.bad, f.err
}

func newToolsWorld(t *testing.T, token string, tools webconsole.ToolSource) *consoleWorld {
	t.Helper()
	w := newConsoleWorld(t, token)
	c := webconsole.NewConsole(webconsole.ConsoleConfig{Store: w.st, Live: w.live, Token: token,
		Dirs: webconsole.Workdirs{Projects: map[string]string{"web": "/srv/web"}, Fallback: "/srv/work"}, Tools: tools})
	p := api.New(api.Config{Listen: "127.0.0.1:0", Token: token, Answers: w.st, Handlers: c.Routes()})
	w.srv.Config.Handler = p.Handler()
	return w
}

// TestConsoleMCPAndSkills: /api/mcp lists codex's MCP servers with their
// tools (never null) and errors; /api/skills lists the skills of the
// default directory or of a configured project, and refuses a project
// not configured; both need the token and answer codex's failure 502.
func TestConsoleMCPAndSkills(t *testing.T) {
	var dirs []string
	tools := fakeTools{dirs: &dirs,
		servers: []codex.MCPServer{{Name: "files", Tools: []string{"read"}}, {Name: "broken", Error: "MCP startup failed"}},
		skills:  []codex.Skill{{Name: "deploy", Description: "Ship it", Enabled: true, Scope: codex.SkillRepo}},
		bad:     []codex.SkillError{{Path: "/srv/web/.codex/skills/x/SKILL.md", Message: "missing name"}},
	}
	w := newToolsWorld(t, "s3cret", tools)
	auth := map[string]string{"Authorization": "Bearer s3cret"}
	for _, path := range []string{"/api/mcp", "/api/skills"} {
		if code := w.get(t, path, nil, nil); code != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d, want 401", path, code)
		}
	}

	var mcp struct {
		Servers []struct {
			Name, Status, Error string
			Tools               []string
		}
	}
	if code := w.get(t, "/api/mcp", auth, &mcp); code != http.StatusOK {
		t.Fatalf("GET /api/mcp: %d", code)
	}
	if len(mcp.Servers) != 2 || mcp.Servers[0].Name != "files" || strings.Join(mcp.Servers[0].Tools, ",") != "read" ||
		mcp.Servers[1].Tools == nil || mcp.Servers[1].Error != "MCP startup failed" {
		t.Errorf("/api/mcp = %+v", mcp)
	}

	var skills struct {
		Directory string
		Skills    []struct {
			Name, Description, Scope string
			Enabled                  bool
		}
		Errors []struct{ Path, Message string }
	}
	if code := w.get(t, "/api/skills", auth, &skills); code != http.StatusOK || skills.Directory != "/srv/work" {
		t.Fatalf("GET /api/skills: %d %+v, want the default directory's", code, skills)
	}
	if code := w.get(t, "/api/skills?project=web", auth, &skills); code != http.StatusOK || skills.Directory != "/srv/web" {
		t.Fatalf("GET /api/skills?project=web: %d %+v", code, skills)
	}
	if len(skills.Skills) != 1 || skills.Skills[0].Name != "deploy" || !skills.Skills[0].Enabled || len(skills.Errors) != 1 {
		t.Errorf("/api/skills = %+v", skills)
	}
	var body map[string]string
	if code := w.get(t, "/api/skills?project=../etc", auth, &body); code != http.StatusNotFound {
		t.Errorf("an unknown project: %d %v, want 404", code, body)
	}
	if strings.Join(dirs, ",") != "/srv/work,/srv/web" {
		t.Errorf("codex was asked for the skills of %q, want only the configured directories", dirs)
	}

	failing := newToolsWorld(t, "", fakeTools{dirs: &dirs, err: errors.New("codex: mcpServerStatus/list: boom")})
	for _, path := range []string{"/api/mcp", "/api/skills"} {
		if code := failing.get(t, path, nil, &body); code != http.StatusBadGateway || !strings.Contains(body["error"], "boom") {
			t.Errorf("%s when codex fails: %d %v, want 502 naming the failure", path, code, body)
		}
	}
	if code := newToolsWorld(t, "", nil).get(t, "/api/mcp", nil, &body); code != http.StatusServiceUnavailable {
		t.Errorf("/api/mcp without a source: %d, want 503", code)
	}
}
