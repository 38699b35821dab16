// Package toolbox is /mcp and /skills: what the agent has to work with
// besides codex's built-in tools, as codex reports it. /mcp lists the MCP
// servers (their connection in the lane's thread, their tools), /mcp
// reload makes codex read their configuration again (admins only: it is
// the app-server's, every lane's), /skills lists the skills codex offers
// in the lane's working directory. The web console lists both too
// (MCPServers, Skills).
package toolbox

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// Commands run on the platform's delivery goroutine, so every call to
// codex is bounded. Listing MCP servers without a loaded thread makes
// codex start each one to ask for its tools: that is the slow one.
const (
	listTimeout  = 10 * time.Second
	mcpTimeout   = 30 * time.Second
	errorMax     = 160 // characters of a server's or skill's error shown
	descMax      = 100 // characters of a skill's description shown
	reloadWord   = "reload"
	usageMCPText = "Usage: /mcp lists Codex's MCP servers; /mcp reload reads their configuration again (admins)."
)

// Store is the lane's row: its thread and what its working directory is.
type Store interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
}

// Runtime is codex's MCP servers and skills.
type Runtime interface {
	ListMCPServers(ctx context.Context, threadID string) ([]codex.MCPServer, error)
	ReloadMCPServers(ctx context.Context) error
	ListSkills(ctx context.Context, cwd string) ([]codex.Skill, []codex.SkillError, error)
}

var (
	_ Store   = (*store.Store)(nil)
	_ Runtime = (*codex.Client)(nil)
)

// Toolbox is /mcp and /skills.
type Toolbox struct {
	st   Store
	cx   Runtime
	host ext.Host
	log  *zap.Logger
}

// New is /mcp and /skills over st and cx.
func New(st Store, cx Runtime) *Toolbox { return &Toolbox{st: st, cx: cx, log: zap.NewNop()} }

// Name is the feature's name.
func (tb *Toolbox) Name() string { return "toolbox" }

// Register adds /mcp and /skills.
func (tb *Toolbox) Register(h ext.Host) error {
	tb.host, tb.log = h, h.Logger()
	h.Command(ext.Command{Name: "mcp", Args: "[reload]", Menu: true,
		Description: "List Codex's MCP servers and their tools",
		Run: func(ctx context.Context, c ext.Call) bool {
			h.Notify(ctx, c.Lane.Address(), c.MsgID, tb.mcp(ctx, c))
			return true
		}})
	h.Command(ext.Command{Name: "skills", Menu: true,
		Description: "List the skills Codex offers here",
		Run: func(ctx context.Context, c ext.Call) bool {
			h.Notify(ctx, c.Lane.Address(), c.MsgID, tb.skills(ctx, c.Lane))
			return true
		}})
	return nil
}

// mcp is /mcp and /mcp reload.
func (tb *Toolbox) mcp(ctx context.Context, c ext.Call) string {
	switch arg := strings.ToLower(strings.TrimSpace(c.Args)); arg {
	case "":
		return tb.listMCP(ctx, c.Lane)
	case reloadWord:
		return tb.reloadMCP(ctx, c)
	}
	return usageMCPText
}

// listMCP lists the servers as the lane's loaded thread has them; a
// lane without one gets codex's fresh check of its configuration.
func (tb *Toolbox) listMCP(ctx context.Context, l ext.Lane) string {
	thread := tb.loadedThread(ctx, l)
	cctx, cancel := context.WithTimeout(ctx, mcpTimeout)
	defer cancel()
	servers, err := tb.cx.ListMCPServers(cctx, thread)
	if thread != "" && errors.Is(err, codex.ErrThreadNotLoaded) {
		// Released since we looked: what the configuration gives, then.
		thread = ""
		servers, err = tb.cx.ListMCPServers(cctx, "")
	}
	if err != nil {
		tb.log.Warn("mcp.list_failed", zap.String("lane", l.Key()), zap.Error(err))
		return "Could not list Codex's MCP servers: " + ext.BriefCodexError(err)
	}
	return mcpText(servers, thread != "")
}

// loadedThread is the lane's thread when the app-server has it loaded
// for this lane ("" otherwise): its MCP connections are the ones the
// lane's turns use.
func (tb *Toolbox) loadedThread(ctx context.Context, l ext.Lane) string {
	thread, err := ext.LoadedThread(ctx, tb.host, tb.st, l)
	if err != nil {
		tb.log.Warn("mcp.lane_failed", zap.String("lane", l.Key()), zap.Error(err))
	}
	return thread
}

// mcpText is /mcp's answer.
func mcpText(servers []codex.MCPServer, ofThread bool) string {
	if len(servers) == 0 {
		return "Codex has no MCP servers configured (mcp_servers in its config.toml)."
	}
	var b strings.Builder
	if ofThread {
		fmt.Fprintf(&b, "MCP servers of this conversation's Codex thread (%d):", len(servers))
	} else {
		fmt.Fprintf(&b, "MCP servers Codex is configured with (%d; checked now, this conversation has no loaded thread):", len(servers))
	}
	for _, s := range servers {
		fmt.Fprintf(&b, "\n• %s — %s", s.Name, serverState(s))
	}
	b.WriteString("\n/mcp reload reads their configuration again (admins).")
	return b.String()
}

// serverState is a server's status, its tools and its error in words.
func serverState(s codex.MCPServer) string {
	status := statusWords[s.Status]
	if status == "" {
		status = s.Status
	}
	if s.Status == codex.MCPNotConnected {
		status = "reachable"
		if s.Error != "" {
			status = "failed"
		}
	}
	parts := []string{status}
	if s.Error == "" || len(s.Tools) > 0 {
		parts = append(parts, toolCount(len(s.Tools)))
	}
	if s.Auth == "notLoggedIn" && s.Status != codex.MCPNeedsAuth {
		parts = append(parts, "not logged in")
	}
	text := strings.Join(parts, ", ")
	if s.Error != "" {
		text += ": " + ext.QuoteStart(s.Error, errorMax)
	}
	return text
}

// statusWords are codex's connection states as a lane reads them.
var statusWords = map[string]string{
	codex.MCPConnected:  "connected",
	codex.MCPStarting:   "starting",
	codex.MCPNotStarted: "not started",
	codex.MCPFailed:     "failed",
	codex.MCPNeedsAuth:  "needs login",
	codex.MCPCancelled:  "cancelled",
	codex.MCPDisabled:   "disabled",
}

func toolCount(n int) string {
	if n == 1 {
		return "1 tool"
	}
	return fmt.Sprintf("%d tools", n)
}

// MCPServers are codex's MCP servers as it checks them now, with no
// lane's thread: the web console's list (webconsole.ToolSource).
func (tb *Toolbox) MCPServers(ctx context.Context) ([]codex.MCPServer, error) {
	ctx, cancel := context.WithTimeout(ctx, mcpTimeout)
	defer cancel()
	return tb.cx.ListMCPServers(ctx, "")
}

// Skills are the skills codex offers in dir: the web console's list.
func (tb *Toolbox) Skills(ctx context.Context, dir string) ([]codex.Skill, []codex.SkillError, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	return tb.cx.ListSkills(ctx, dir)
}

// reloadMCP is /mcp reload: the app-server's configuration is every
// lane's, so only an admin (codex.admins) may have it read again.
func (tb *Toolbox) reloadMCP(ctx context.Context, c ext.Call) string {
	if !tb.host.IsAdmin(chat.Inbound{Address: c.Lane.Address(), SenderID: c.Sender}) {
		return "Only an admin of this gateway (codex.admins) can reload Codex's MCP servers."
	}
	cctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	if err := tb.cx.ReloadMCPServers(cctx); err != nil {
		tb.log.Warn("mcp.reload_failed", zap.String("lane", c.Lane.Key()), zap.Error(err))
		return "Could not reload Codex's MCP servers: " + ext.BriefCodexError(err)
	}
	tb.log.Info("mcp.reloaded", zap.String("lane", c.Lane.Key()), zap.String("by", c.Sender))
	return "Codex read its MCP server configuration again; each thread connects with it from its next turn."
}

// skills is /skills: the skills codex offers in the lane's working
// directory (its project's worktree or checkout, or its own).
func (tb *Toolbox) skills(ctx context.Context, l ext.Lane) string {
	sl, err := tb.st.Lane(ctx, l.Key())
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		tb.log.Warn("skills.lane_failed", zap.String("lane", l.Key()), zap.Error(err))
		return "Could not read this conversation's working directory (storage error). Please try again."
	}
	sl.SessionKey = l.Key()
	dir := tb.host.WorkDir(sl)
	cctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	skills, bad, err := tb.cx.ListSkills(cctx, dir)
	if err != nil {
		tb.log.Warn("skills.list_failed", zap.String("lane", l.Key()), zap.Error(err))
		return "Could not list Codex's skills: " + ext.BriefCodexError(err)
	}
	return skillsText(dir, skills, bad)
}

// skillsText is /skills' answer: the skills of the place, the user and
// the admin with their descriptions, codex's own by name.
func skillsText(dir string, skills []codex.Skill, bad []codex.SkillError) string {
	var own, system []string
	for _, s := range skills {
		if s.Scope == codex.SkillSystem {
			system = append(system, s.Name+disabledMark(s))
			continue
		}
		line := "• " + s.Name + disabledMark(s)
		if s.Description != "" {
			line += " — " + ext.QuoteStart(s.Description, descMax)
		}
		own = append(own, line)
	}
	var b strings.Builder
	switch {
	case len(own) == 0 && len(system) == 0:
		fmt.Fprintf(&b, "Codex offers no skills in %s.", dirName(dir))
	case len(own) == 0:
		fmt.Fprintf(&b, "No skills of yours in %s (SKILL.md under CODEX_HOME/skills, or the project's .codex/skills or .agents/skills).", dirName(dir))
	default:
		fmt.Fprintf(&b, "Skills Codex offers in %s (%d):\n%s", dirName(dir), len(own), strings.Join(own, "\n"))
	}
	if len(system) > 0 {
		b.WriteString("\nCodex's own: " + strings.Join(system, ", "))
	}
	for _, e := range bad {
		fmt.Fprintf(&b, "\nCould not load %s: %s", e.Path, ext.QuoteStart(e.Message, errorMax))
	}
	return b.String()
}

func disabledMark(s codex.Skill) string {
	if s.Enabled {
		return ""
	}
	return " (disabled)"
}

func dirName(dir string) string {
	if dir == "" {
		return "this conversation's directory"
	}
	return dir
}
