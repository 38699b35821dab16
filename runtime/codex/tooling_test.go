package codex

import (
	"errors"
	"reflect"
	"testing"
)

func TestListMCPServersFollowsTheCursor(t *testing.T) {
	t.Parallel()
	fc := startFake(t, fakeConfig{})
	ctx := testCtx(t)
	thread := fc.newThread(t)

	tests := []struct {
		name   string
		thread string
		want   []MCPServer
	}{
		{"for a loaded thread", thread, []MCPServer{
			{Name: "files", Status: MCPConnected, Tools: []string{"a", "b"}, Auth: "unsupported"},
			{Name: "broken", Status: MCPFailed, Error: "MCP startup failed: boom", Auth: "unsupported"},
		}},
		{"without a thread", "", []MCPServer{
			{Name: "files", Status: MCPNotConnected, Tools: []string{"a", "b"}, Auth: "unsupported"},
			{Name: "broken", Status: MCPNotConnected, Error: "MCP startup failed: boom", Auth: "unsupported"},
		}},
	}
	for _, tt := range tests {
		got, err := fc.ListMCPServers(ctx, tt.thread)
		if err != nil {
			t.Fatalf("%s: ListMCPServers: %v", tt.name, err)
		}
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s: ListMCPServers = %+v\nwant %+v", tt.name, got, tt.want)
		}
	}
	if got := count(fc.received(t), "mcpServerStatus/list"); got != 4 {
		t.Errorf("mcpServerStatus/list sent %d times, want 4 (two pages, twice)", got)
	}
}

func TestListMCPServersOfAThreadNotLoaded(t *testing.T) {
	t.Parallel()
	fc := startFake(t, fakeConfig{})
	_, err := fc.ListMCPServers(testCtx(t), "01990000-not-loaded")
	if !errors.Is(err, ErrThreadNotLoaded) {
		t.Errorf("ListMCPServers of a thread not loaded: err = %v, want ErrThreadNotLoaded", err)
	}
}

func TestReloadMCPServers(t *testing.T) {
	t.Parallel()
	fc := startFake(t, fakeConfig{})
	ctx := testCtx(t)
	if err := fc.ReloadMCPServers(ctx); err != nil {
		t.Fatalf("ReloadMCPServers: %v", err)
	}
	got, err := fc.ListMCPServers(ctx, "")
	if err != nil {
		t.Fatalf("ListMCPServers: %v", err)
	}
	if len(got) != 3 || got[2].Name != "reloaded" {
		t.Errorf("after the reload ListMCPServers = %+v, want the reloaded server third", got)
	}
}

func TestListSkills(t *testing.T) {
	t.Parallel()
	fc := startFake(t, fakeConfig{})
	ctx := testCtx(t)
	skills, errs, err := fc.ListSkills(ctx, "/work/app")
	if err != nil {
		t.Fatalf("ListSkills: %v", err)
	}
	want := []Skill{
		{Name: "deploy", Description: "Ship it", Enabled: true, Scope: SkillRepo, Path: "/work/app/.codex/skills/deploy/SKILL.md"},
		{Name: "lint", Description: "Runs the linters.", Scope: SkillUser, Path: "/work/app/.codex/skills/lint/SKILL.md"},
	}
	if !reflect.DeepEqual(skills, want) {
		t.Errorf("ListSkills = %+v\nwant %+v", skills, want)
	}
	if wantErrs := []SkillError{{Path: "/work/app/.codex/skills/bad/SKILL.md", Message: "missing name"}}; !reflect.DeepEqual(errs, wantErrs) {
		t.Errorf("ListSkills errors = %+v, want %+v", errs, wantErrs)
	}
	var rpc *RPCError
	if _, _, err := fc.ListSkills(ctx, "/fail"); !errors.As(err, &rpc) || rpc.Message != "test fake: skills unavailable" {
		t.Errorf("ListSkills refused: err = %v, want the app-server's error", err)
	}
}
