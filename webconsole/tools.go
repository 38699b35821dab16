package webconsole

import (
	"context"
	"net/http"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// ToolSource is what codex gives the agent to work with besides its
// built-in tools: its MCP servers and its skills. feature/toolbox (the
// lanes' /mcp and /skills) is the one.
type ToolSource interface {
	// MCPServers are codex's MCP servers as it checks them now (no
	// lane's thread: no connection state).
	MCPServers(ctx context.Context) ([]codex.MCPServer, error)
	// Skills are the skills codex offers in the working directory dir.
	Skills(ctx context.Context, dir string) ([]codex.Skill, []codex.SkillError, error)
}

type mcpServerView struct {
	Name   string   `json:"name"`
	Status string   `json:"status,omitempty"` // the connection state, when codex gives one
	Tools  []string `json:"tools"`
	Error  string   `json:"error,omitempty"`
	Auth   string   `json:"auth,omitempty"`
}

// mcp answers codex's MCP servers (GET /api/mcp).
func (c *Console) mcp(w http.ResponseWriter, r *http.Request) {
	if c.tools == nil {
		writeJSON(w, http.StatusServiceUnavailable, errorBody("MCP servers are not available in this process"))
		return
	}
	servers, err := c.tools.MCPServers(r.Context())
	if err != nil {
		writeJSON(w, http.StatusBadGateway, errorBody("codex did not list its MCP servers: "+err.Error()))
		return
	}
	views := make([]mcpServerView, 0, len(servers))
	for _, s := range servers {
		tools := s.Tools
		if tools == nil {
			tools = []string{}
		}
		views = append(views, mcpServerView{Name: s.Name, Status: s.Status, Tools: tools, Error: s.Error, Auth: s.Auth})
	}
	writeJSON(w, http.StatusOK, map[string]any{"servers": views})
}

type skillView struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	Enabled     bool   `json:"enabled"`
	Scope       string `json:"scope"`
}

type skillErrorView struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

// skills answers the skills codex offers in a project's directory
// (?project=NAME, one of /api/projects) or where a lane without one
// works (GET /api/skills). Only configured directories are asked for:
// the console names no path of its own.
func (c *Console) skills(w http.ResponseWriter, r *http.Request) {
	if c.tools == nil {
		writeJSON(w, http.StatusServiceUnavailable, errorBody("skills are not available in this process"))
		return
	}
	dir := c.dirs.Fallback
	if name := r.URL.Query().Get("project"); name != "" {
		var ok bool
		if dir, ok = c.dirs.Projects[name]; !ok {
			writeJSON(w, http.StatusNotFound, errorBody("no project "+name+" (GET /api/projects lists them)"))
			return
		}
	}
	skills, bad, err := c.tools.Skills(r.Context(), dir)
	if err != nil {
		writeJSON(w, http.StatusBadGateway, errorBody("codex did not list its skills: "+err.Error()))
		return
	}
	views := make([]skillView, 0, len(skills))
	for _, s := range skills {
		views = append(views, skillView{Name: s.Name, Description: s.Description, Enabled: s.Enabled, Scope: s.Scope})
	}
	errs := make([]skillErrorView, 0, len(bad))
	for _, e := range bad {
		errs = append(errs, skillErrorView(e))
	}
	writeJSON(w, http.StatusOK, map[string]any{"directory": dir, "skills": views, "errors": errs})
}
