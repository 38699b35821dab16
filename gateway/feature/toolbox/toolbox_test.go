package toolbox

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

type fakeStore struct {
	lane store.Lane
	err  error
}

func (s fakeStore) Lane(context.Context, string) (store.Lane, error) { return s.lane, s.err }

// fakeRuntime answers with its fields and records what it was asked.
type fakeRuntime struct {
	servers   []codex.MCPServer
	mcpErr    error
	notLoaded bool // a thread id is answered "thread not found"
	reloadErr error
	skills    []codex.Skill
	bad       []codex.SkillError
	skillsErr error

	mu       sync.Mutex
	threads  []string // the thread of each ListMCPServers
	reloaded int
	cwds     []string
}

func (r *fakeRuntime) ListMCPServers(_ context.Context, thread string) ([]codex.MCPServer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.threads = append(r.threads, thread)
	if thread != "" && r.notLoaded {
		return nil, &codex.RPCError{Method: "mcpServerStatus/list", Code: -32600, Message: "thread not found: " + thread}
	}
	return r.servers, r.mcpErr
}

func (r *fakeRuntime) ReloadMCPServers(context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reloaded++
	return r.reloadErr
}

func (r *fakeRuntime) ListSkills(_ context.Context, cwd string) ([]codex.Skill, []codex.SkillError, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cwds = append(r.cwds, cwd)
	return r.skills, r.bad, r.skillsErr
}

var laneAddr = chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}

// run registers a Toolbox over st and cx, runs the command as typed by
// sender "u1" in lane l and returns its one notice.
func run(t *testing.T, h *exttest.Host, l *exttest.Lane, st Store, cx Runtime, name, args string) string {
	t.Helper()
	h.Register(t, New(st, cx))
	if !h.Run(context.Background(), l, name, args, "m1") {
		t.Fatalf("/%s %s: not answered as done", name, args)
	}
	n := h.Notices()
	if len(n) != 1 || n[0].ReplyTo != "m1" || n[0].Addr != laneAddr {
		t.Fatalf("/%s %s: notices %+v, want one reply to m1 in the lane", name, args, n)
	}
	return n[0].Text
}

var testServers = []codex.MCPServer{
	{Name: "files", Status: codex.MCPConnected, Tools: []string{"read", "write"}},
	{Name: "broken", Status: codex.MCPFailed, Error: "MCP startup failed: handshaking with MCP server failed"},
	{Name: "one", Status: codex.MCPNeedsAuth, Tools: []string{"x"}},
}

// TestMCPListsTheLoadedThreadsServers: /mcp asks codex for the lane's
// thread when the lane has it loaded, for the configuration otherwise
// (no row, a lost binding, a thread another lane or none has loaded, a
// thread released between the look and the call), and shows each
// server's state, tools and error.
func TestMCPListsTheLoadedThreadsServers(t *testing.T) {
	bound := store.Lane{ThreadID: "T1", Binding: store.BindingConfirmed}
	other := &exttest.Lane{Addr: chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "b"}}
	tests := []struct {
		name      string
		st        fakeStore
		loadedBy  string // the lane that has T1 loaded: "here", "other" or none
		notLoaded bool
		asked     []string // the threads codex was asked for
		head      string
	}{
		{"loaded here", fakeStore{lane: bound}, "here", false, []string{"T1"}, "MCP servers of this conversation's Codex thread (3):"},
		{"loaded by another lane", fakeStore{lane: bound}, "other", false, []string{""}, "MCP servers Codex is configured with (3; checked now"},
		{"not loaded", fakeStore{lane: bound}, "", false, []string{""}, "MCP servers Codex is configured with"},
		{"no row", fakeStore{err: store.ErrNotFound}, "here", false, []string{""}, "MCP servers Codex is configured with"},
		{"lost", fakeStore{lane: store.Lane{ThreadID: "T1", Binding: store.BindingLost}}, "here", false, []string{""}, "MCP servers Codex is configured with"},
		{"released meanwhile", fakeStore{lane: bound}, "here", true, []string{"T1", ""}, "MCP servers Codex is configured with"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := exttest.NewHost(t)
			l := &exttest.Lane{Addr: laneAddr}
			switch tc.loadedBy {
			case "here":
				h.Threads = map[string]ext.Lane{"T1": l}
			case "other":
				h.Threads = map[string]ext.Lane{"T1": other}
			}
			cx := &fakeRuntime{servers: testServers, notLoaded: tc.notLoaded}
			text := run(t, h, l, tc.st, cx, "mcp", "")
			if !strings.HasPrefix(text, tc.head) {
				t.Errorf("/mcp answered %q, want it to start %q", text, tc.head)
			}
			if strings.Join(cx.threads, ",") != strings.Join(tc.asked, ",") {
				t.Errorf("codex was asked for threads %q, want %q", cx.threads, tc.asked)
			}
			for _, want := range []string{"\n• files — connected, 2 tools", "\n• broken — failed: MCP startup failed",
				"\n• one — needs login, 1 tool", "/mcp reload"} {
				if !strings.Contains(text, want) {
					t.Errorf("/mcp answered %q, want %q in it", text, want)
				}
			}
		})
	}
}

func TestMCPWithoutAThreadSaysWhatCodexChecked(t *testing.T) {
	h := exttest.NewHost(t)
	cx := &fakeRuntime{servers: []codex.MCPServer{
		{Name: "files", Tools: []string{"read"}},
		{Name: "broken", Error: "MCP startup failed"},
	}}
	text := run(t, h, &exttest.Lane{Addr: laneAddr}, fakeStore{err: store.ErrNotFound}, cx, "mcp", "")
	for _, want := range []string{"• files — reachable, 1 tool", "• broken — failed: MCP startup failed"} {
		if !strings.Contains(text, want) {
			t.Errorf("/mcp answered %q, want %q in it", text, want)
		}
	}
}

// TestMCPAnswersEveryOutcome: no servers, codex's error, an unknown
// argument: each is one answer, nothing is silent.
func TestMCPAnswersEveryOutcome(t *testing.T) {
	tests := []struct {
		name, args string
		cx         *fakeRuntime
		want       string
	}{
		{"none", "", &fakeRuntime{}, "Codex has no MCP servers configured"},
		{"codex refuses", "", &fakeRuntime{mcpErr: &codex.RPCError{Method: "mcpServerStatus/list", Code: -32600, Message: "boom\nsecond line"}},
			"Could not list Codex's MCP servers: boom"},
		{"codex times out", "", &fakeRuntime{mcpErr: codex.ErrTimeout}, "Could not list Codex's MCP servers: Codex did not answer in time."},
		{"unknown argument", "restart", &fakeRuntime{}, "Usage: /mcp"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			text := run(t, exttest.NewHost(t), &exttest.Lane{Addr: laneAddr}, fakeStore{err: store.ErrNotFound}, tc.cx, "mcp", tc.args)
			if text != tc.want && !strings.HasPrefix(text, tc.want) {
				t.Errorf("/mcp %s answered %q, want %q", tc.args, text, tc.want)
			}
			if strings.Contains(text, "second line") {
				t.Errorf("/mcp answered %q: more than codex's first line", text)
			}
		})
	}
}

// TestMCPReloadIsForAdmins: /mcp reload reloads only for a sender the
// gateway's admins list names, and says what happened.
func TestMCPReloadIsForAdmins(t *testing.T) {
	tests := []struct {
		name     string
		admin    bool
		err      error
		reloaded int
		want     string
	}{
		{"admin", true, nil, 1, "Codex read its MCP server configuration again"},
		{"not an admin", false, nil, 0, "Only an admin of this gateway"},
		{"codex refuses", true, errors.New("codex: config/mcpServer/reload: gone"), 1, "Could not reload Codex's MCP servers: codex: config/mcpServer/reload: gone"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := exttest.NewHost(t)
			if tc.admin {
				h.Admins = map[string]bool{"u1": true}
			}
			cx := &fakeRuntime{reloadErr: tc.err}
			text := run(t, h, &exttest.Lane{Addr: laneAddr}, fakeStore{}, cx, "mcp", "Reload")
			if !strings.HasPrefix(text, tc.want) {
				t.Errorf("/mcp reload answered %q, want it to start %q", text, tc.want)
			}
			if cx.reloaded != tc.reloaded {
				t.Errorf("reloaded %d times, want %d", cx.reloaded, tc.reloaded)
			}
		})
	}
}

// TestSkillsListsTheWorkingDirectorysSkills: /skills asks codex for the
// lane's working directory and lists the place's and the user's skills
// with their descriptions, codex's own by name, and what failed to load.
func TestSkillsListsTheWorkingDirectorysSkills(t *testing.T) {
	h := exttest.NewHost(t)
	h.Dir = "/work/app"
	cx := &fakeRuntime{
		skills: []codex.Skill{
			{Name: "deploy", Description: "Ship it", Enabled: true, Scope: codex.SkillRepo},
			{Name: "lint", Description: strings.Repeat("long ", 40), Scope: codex.SkillUser},
			{Name: "imagegen", Enabled: true, Scope: codex.SkillSystem},
			{Name: "old", Scope: codex.SkillSystem},
		},
		bad: []codex.SkillError{{Path: "/work/app/.codex/skills/bad/SKILL.md", Message: "missing name"}},
	}
	text := run(t, h, &exttest.Lane{Addr: laneAddr}, fakeStore{err: store.ErrNotFound}, cx, "skills", "")
	if len(cx.cwds) != 1 || cx.cwds[0] != "/work/app" {
		t.Errorf("codex was asked for the skills of %q, want the lane's working directory", cx.cwds)
	}
	for _, want := range []string{"Skills Codex offers in /work/app (2):", "\n• deploy — Ship it", "\n• lint (disabled) — long long",
		"\nCodex's own: imagegen, old (disabled)", "\nCould not load /work/app/.codex/skills/bad/SKILL.md: missing name"} {
		if !strings.Contains(text, want) {
			t.Errorf("/skills answered %q, want %q in it", text, want)
		}
	}
	if strings.Contains(text, strings.Repeat("long ", 30)) {
		t.Errorf("/skills answered %q: a description is not cut", text)
	}
}

func TestSkillsAnswersEveryOutcome(t *testing.T) {
	tests := []struct {
		name string
		st   fakeStore
		cx   *fakeRuntime
		want string
	}{
		{"none", fakeStore{}, &fakeRuntime{}, "Codex offers no skills in /p."},
		{"only codex's", fakeStore{}, &fakeRuntime{skills: []codex.Skill{{Name: "imagegen", Enabled: true, Scope: codex.SkillSystem}}},
			"No skills of yours in /p"},
		{"codex refuses", fakeStore{}, &fakeRuntime{skillsErr: &codex.RPCError{Method: "skills/list", Code: -32600, Message: "no"}},
			"Could not list Codex's skills: no"},
		{"storage fails", fakeStore{err: errors.New("disk")}, &fakeRuntime{}, "Could not read this conversation's working directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := exttest.NewHost(t)
			h.Dir = "/p"
			text := run(t, h, &exttest.Lane{Addr: laneAddr}, tc.st, tc.cx, "skills", "")
			if !strings.HasPrefix(text, tc.want) {
				t.Errorf("/skills answered %q, want it to start %q", text, tc.want)
			}
		})
	}
}
