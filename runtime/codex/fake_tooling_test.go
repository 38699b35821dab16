package codex

import (
	"encoding/json"
	"strings"
)

// The fake app-server's MCP servers and skills (tooling.go).
//
// mcpServerStatus/list answers two pages, "files" (tools b and a) then
// "broken" (its tools could not be listed), with connection states only
// when asked for a thread, which must be loaded; it refuses any detail
// but toolsAndAuthOnly. config/mcpServer/reload answers {} and the next
// list names "reloaded" too. skills/list answers for its one cwd: a
// skill with an interface short description, a disabled one with only a
// description, and an error; a cwd of "/fail" is refused.

func (f *fakeServer) tooling(id json.RawMessage, method string, p map[string]any) {
	switch method {
	case "mcpServerStatus/list":
		f.listMCP(id, p)
	case "config/mcpServer/reload":
		f.mu.Lock()
		f.reloaded = true
		f.mu.Unlock()
		f.result(id, map[string]any{})
	case "skills/list":
		f.listSkills(id, p)
	}
}

func (f *fakeServer) listMCP(id json.RawMessage, p map[string]any) {
	if p["detail"] != "toolsAndAuthOnly" {
		f.fail(id, "test fake: detail must be toolsAndAuthOnly")
		return
	}
	tid, _ := p["threadId"].(string)
	f.mu.Lock()
	loaded, reloaded := f.loaded[tid], f.reloaded
	f.mu.Unlock()
	if tid != "" && !loaded {
		f.fail(id, "thread not found: "+tid)
		return
	}
	status := func(s string) any {
		if tid == "" {
			return nil
		}
		return s
	}
	server := func(name string, st any, tools []string, toolsErr any) map[string]any {
		ts := map[string]any{}
		for _, t := range tools {
			ts[t] = map[string]any{"name": t, "inputSchema": map[string]any{"type": "object"}}
		}
		return map[string]any{"name": name, "runtimeStatus": st, "tools": ts, "toolsError": toolsErr,
			"resources": []any{}, "resourceTemplates": []any{}, "authStatus": "unsupported"}
	}
	if cursor, _ := p["cursor"].(string); cursor == "" {
		f.result(id, map[string]any{"data": []any{server("files", status("connected"), []string{"b", "a"}, nil)}, "nextCursor": "p2"})
		return
	}
	data := []any{server("broken", status("failed"), nil, "MCP startup failed: boom")}
	if reloaded {
		data = append(data, server("reloaded", status("starting"), nil, nil))
	}
	f.result(id, map[string]any{"data": data, "nextCursor": nil})
}

func (f *fakeServer) listSkills(id json.RawMessage, p map[string]any) {
	cwds, _ := p["cwds"].([]any)
	if len(cwds) != 1 {
		f.fail(id, "test fake: want one cwd")
		return
	}
	cwd, _ := cwds[0].(string)
	if cwd == "/fail" {
		f.fail(id, "test fake: skills unavailable")
		return
	}
	home := strings.TrimSuffix(cwd, "/") + "/.codex/skills/"
	f.result(id, map[string]any{"data": []any{map[string]any{"cwd": cwd,
		"skills": []any{
			map[string]any{"name": "deploy", "description": "Deploys the app to production with the team's checklist.",
				"interface": map[string]any{"shortDescription": "Ship it"}, "enabled": true, "scope": "repo", "path": home + "deploy/SKILL.md"},
			map[string]any{"name": "lint", "description": "Runs the linters.", "shortDescription": nil,
				"enabled": false, "scope": "user", "path": home + "lint/SKILL.md"},
		},
		"errors": []any{map[string]any{"path": home + "bad/SKILL.md", "message": "missing name"}},
	}}})
}
