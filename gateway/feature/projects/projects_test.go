package projects

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/store"
)

// The feature through the real core (turn directories, worktrees,
// restarts, buttons) is tested in package gateway (projects_test.go and
// the integration tests); these are its own rules, against the fake host.

const defaultDir = "/srv/default"

var testProjects = map[string]string{"api": "/srv/src/api", "site": "/srv/src/site"}

// fakeStore keeps each lane's project.
type fakeStore struct {
	mu       sync.Mutex
	projects map[string]string
}

func (s *fakeStore) Lane(_ context.Context, key string) (store.Lane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return store.Lane{SessionKey: key, Project: s.projects[key]}, nil
}

func (s *fakeStore) EnsureLane(ctx context.Context, k store.LaneKey) (store.Lane, error) {
	return s.Lane(ctx, k.SessionKey)
}

func (s *fakeStore) SetProject(_ context.Context, key, name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.projects[key] = name
	return nil
}

func (s *fakeStore) ForgetProject(_ context.Context, key, name string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.projects[key] != name {
		return false, nil
	}
	delete(s.projects, key)
	return true, nil
}

func setup(t *testing.T, dirs map[string]string) (*Feature, *exttest.Host, *exttest.Lane, *fakeStore) {
	t.Helper()
	st := &fakeStore{projects: make(map[string]string)}
	h := exttest.NewHost(t)
	h.Dir = defaultDir
	f := New(Settings{Projects: dirs}, st)
	h.Register(t, f)
	return f, h, &exttest.Lane{Addr: chat.Address{Platform: "api", Kind: chat.LaneDM, ChatID: "a", UserID: "a"}}, st
}

func TestFindMatchesANameIgnoringCaseOnly(t *testing.T) {
	set := newProjectSet(map[string]string{"api": "/a", "Site": "/s"}, func(string) string { return defaultDir })
	for name, want := range map[string]string{"api": "api", "API": "api", "site": "Site", "../api": "", "/a": ""} {
		got, ok := set.find(name)
		if got != want || ok != (want != "") {
			t.Errorf("find(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
}

func TestDescribeSaysWhereTheLaneWorks(t *testing.T) {
	set := newProjectSet(testProjects, func(string) string { return defaultDir })
	noCwd := newProjectSet(nil, func(string) string { return "" })
	for _, tc := range []struct {
		set  projectSet
		name string
		want string
	}{
		{set, "", "none (default directory " + defaultDir + ")"},
		{set, "site", "site (/srv/src/site)"},
		{set, "gone", "gone is no longer configured (working in the default directory " + defaultDir + ")"},
		{noCwd, "", "none (default directory (codex's own))"},
	} {
		if got := tc.set.describe("k", tc.name); got != tc.want {
			t.Errorf("describe(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestButtonsLeaveOutIDsTooLongForAPlatform(t *testing.T) {
	long := strings.Repeat("x", maxButtonID)
	set := newProjectSet(map[string]string{"api": "/a", long: "/x"}, func(string) string { return "" })
	b := set.buttons()
	if len(b) != 1 || b[0].ID != "project:api" || b[0].Label != "api" {
		t.Errorf("buttons %+v, want only project:api", b)
	}
	if !strings.Contains(set.choices(), "• "+long+" — /x\n") {
		t.Errorf("choices %q lack the long name", set.choices())
	}
}

func TestProjectCommandStoresTheChoice(t *testing.T) {
	f, h, l, st := setup(t, testProjects)
	ctx := context.Background()
	if !h.Run(ctx, l, "project", "SITE", "m1") {
		t.Fatal("/project did not answer")
	}
	n := h.Notices()
	if len(n) != 1 || !strings.HasPrefix(n[0].Text, "Project: site. This conversation now works in /srv/src/site") || n[0].ReplyTo != "m1" {
		t.Fatalf("notices %+v", n)
	}
	sl, _ := st.Lane(ctx, l.Key())
	if sl.Project != "site" {
		t.Errorf("stored project %q, want site", sl.Project)
	}
	if got := h.Status(ctx, sl); got != "Project: site (/srv/src/site)\n" {
		t.Errorf("status %q (worktrees are off: no worktree line)", got)
	}
	if f.ProjectDir(sl) != "/srv/src/site" || f.WorkDir(sl) != "/srv/src/site" || f.Describe(sl) != "site (/srv/src/site)" {
		t.Errorf("places: project %q, work %q, describe %q", f.ProjectDir(sl), f.WorkDir(sl), f.Describe(sl))
	}
	if f.ProjectDir(store.Lane{SessionKey: "other"}) != defaultDir {
		t.Errorf("a lane without a project works in %q, want the default", f.ProjectDir(store.Lane{SessionKey: "other"}))
	}
}

func TestProjectCommandRefusesWhatIsNotAConfiguredName(t *testing.T) {
	_, h, l, st := setup(t, testProjects)
	ctx := context.Background()
	h.Run(ctx, l, "project", "/srv/src/site", "m1")
	if n := h.Notices(); len(n) != 1 || n[0].Text != `Unknown project "/srv/src/site". Choose one of: api, site.` {
		t.Errorf("notices %+v", n)
	}
	if sl, _ := st.Lane(ctx, l.Key()); sl.Project != "" {
		t.Errorf("stored project %q, want none", sl.Project)
	}
}

func TestWorktreeWithWorktreesOffSaysSo(t *testing.T) {
	f, _, l, _ := setup(t, testProjects)
	_, why, ok := f.Worktree(context.Background(), l, store.Lane{SessionKey: l.Key(), Project: "api"})
	if ok || !strings.Contains(why, "Worktrees are off (lanes.worktrees: false)") {
		t.Errorf("Worktree = %v, %q; want worktrees off", ok, why)
	}
}
