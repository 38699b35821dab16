package codex

import (
	"context"
	"fmt"
	"sort"
	"strings"
)

// What the agent has to work with besides its built-in tools: the MCP
// servers of codex's configuration (mcpServerStatus/list,
// config/mcpServer/reload) and its skills (skills/list). Wire shapes from
// the 0.171.0 schema (ListMcpServerStatusResponse, SkillsListResponse).

// MCP server connection states (McpServerConnectionStatus), and the one
// the client gives a server listed without a thread's runtime state.
const (
	MCPConnected    = "connected"
	MCPStarting     = "starting"
	MCPNotStarted   = "notStarted"
	MCPFailed       = "failed"
	MCPNeedsAuth    = "authenticationRequired"
	MCPCancelled    = "cancelled"
	MCPDisabled     = "disabled"
	MCPNotConnected = "" // listed without a thread: codex reported no runtime state
)

// MCPServer is one MCP server as codex lists it.
type MCPServer struct {
	Name string
	// Status is the thread's connection state (MCPConnected, MCPFailed, …);
	// MCPNotConnected when the list was not asked for a loaded thread or
	// codex did not say.
	Status string
	// Tools are the names of the tools it offers, sorted.
	Tools []string
	// Error is why its tools could not be listed ("" when they were): a
	// server that failed to start says so here.
	Error string
	Auth  string // authStatus: unknown, unsupported, notLoggedIn, bearerToken, oAuth
}

type wireMCPServer struct {
	Name          string              `json:"name"`
	RuntimeStatus *string             `json:"runtimeStatus"`
	Tools         map[string]struct{} `json:"tools"` // by name; only the names are shown
	ToolsError    *string             `json:"toolsError"`
	AuthStatus    string              `json:"authStatus"`
}

func (w wireMCPServer) server() MCPServer {
	s := MCPServer{Name: w.Name, Status: deref(w.RuntimeStatus), Error: deref(w.ToolsError), Auth: w.AuthStatus}
	for name := range w.Tools {
		s.Tools = append(s.Tools, name)
	}
	sort.Strings(s.Tools)
	return s
}

// maxListPages bounds a paginated list: a server that keeps answering
// with a cursor must not keep us looping.
const maxListPages = 20

// ListMCPServers lists codex's MCP servers with their tools, following
// nextCursor. With threadID (a thread loaded in this app-server) the
// statuses are that thread's connections; with "" codex checks each
// server afresh and reports no connection state. A thread that is not
// loaded is ErrThreadNotLoaded.
func (c *Client) ListMCPServers(ctx context.Context, threadID string) ([]MCPServer, error) {
	var servers []MCPServer
	cursor := ""
	for page := 0; page < maxListPages; page++ {
		// toolsAndAuthOnly: the resources and templates are not shown.
		params := map[string]any{"detail": "toolsAndAuthOnly"}
		if threadID != "" {
			params["threadId"] = threadID
		}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var out struct {
			Data       []wireMCPServer `json:"data"`
			NextCursor *string         `json:"nextCursor"`
		}
		if _, err := c.callLive(ctx, "mcpServerStatus/list", params, &out); err != nil {
			return nil, fmt.Errorf("codex: mcpServerStatus/list: %w", err)
		}
		for _, w := range out.Data {
			servers = append(servers, w.server())
		}
		next := deref(out.NextCursor)
		if next == "" || next == cursor {
			return servers, nil
		}
		cursor = next
	}
	return nil, fmt.Errorf("codex: mcpServerStatus/list: more than %d pages", maxListPages)
}

// ReloadMCPServers makes codex read its MCP server configuration again
// (config/mcpServer/reload): threads pick it up from their next turn.
func (c *Client) ReloadMCPServers(ctx context.Context) error {
	if _, err := c.callLive(ctx, "config/mcpServer/reload", nil, nil); err != nil {
		return fmt.Errorf("codex: config/mcpServer/reload: %w", err)
	}
	return nil
}

// Skill is one skill codex offers the agent in a working directory.
type Skill struct {
	Name string
	// Description is its short description when it has one, else the
	// description the model sees.
	Description string
	Enabled     bool
	Scope       string // user, repo, system or admin
	Path        string // its SKILL.md
}

// Skill scopes (SkillScope).
const (
	SkillUser   = "user"
	SkillRepo   = "repo"
	SkillSystem = "system"
	SkillAdmin  = "admin"
)

type wireSkill struct {
	Name             string  `json:"name"`
	Description      string  `json:"description"`
	ShortDescription *string `json:"shortDescription"`
	Interface        *struct {
		ShortDescription *string `json:"shortDescription"`
	} `json:"interface"`
	Enabled bool   `json:"enabled"`
	Scope   string `json:"scope"`
	Path    string `json:"path"`
}

func (w wireSkill) skill() Skill {
	desc := ""
	if w.Interface != nil {
		desc = deref(w.Interface.ShortDescription)
	}
	if desc == "" {
		desc = deref(w.ShortDescription)
	}
	if desc == "" {
		desc = strings.TrimSpace(w.Description)
	}
	return Skill{Name: w.Name, Description: desc, Enabled: w.Enabled, Scope: w.Scope, Path: w.Path}
}

// SkillError is a skill codex found but could not load.
type SkillError struct {
	Path, Message string
}

// ListSkills lists the skills codex offers in the working directory cwd
// (its own, CODEX_HOME's and the system's), in codex's order, and the
// skills it could not load there.
func (c *Client) ListSkills(ctx context.Context, cwd string) ([]Skill, []SkillError, error) {
	params := map[string]any{}
	if cwd != "" {
		params["cwds"] = []string{cwd}
	}
	var out struct {
		Data []struct {
			Cwd    string      `json:"cwd"`
			Skills []wireSkill `json:"skills"`
			Errors []struct {
				Path    string `json:"path"`
				Message string `json:"message"`
			} `json:"errors"`
		} `json:"data"`
	}
	if _, err := c.callLive(ctx, "skills/list", params, &out); err != nil {
		return nil, nil, fmt.Errorf("codex: skills/list: %w", err)
	}
	var skills []Skill
	var errs []SkillError
	for _, entry := range out.Data {
		for _, w := range entry.Skills {
			skills = append(skills, w.skill())
		}
		for _, e := range entry.Errors {
			errs = append(errs, SkillError{Path: e.Path, Message: e.Message})
		}
	}
	return skills, errs, nil
}
