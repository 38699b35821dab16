package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway/feature/projects"
)

const defaultDir = "/srv/default"

var testProjects = map[string]string{"api": "/srv/src/api", "site": "/srv/src/site"}

// withProjects configures the feature projects with dirs over st (the
// harness's store), and the default directory.
func withProjects(st *fakeStore, dirs map[string]string) harnessOpt {
	return func(c *Config) {
		c.Features = append(c.Features, projects.New(projects.Settings{Projects: dirs}, st))
		c.Thread.Cwd = defaultDir
	}
}

// newProjectsHarness is a harness with the two test projects.
func newProjectsHarness(t *testing.T) *harness {
	t.Helper()
	st := newFakeStore()
	return newHarnessOn(t, st, withProjects(st, testProjects))
}

// dirs returns the cwd of the last EnsureThread and of the last RunTurn.
func (c *fakeCodex) dirs() (ensured, turn string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.configs) > 0 {
		ensured = c.configs[len(c.configs)-1].Cwd
	}
	if len(c.cwds) > 0 {
		turn = c.cwds[len(c.cwds)-1]
	}
	return ensured, turn
}

// restarted is the next start of old's daemon: the same store, and an
// app-server that still has old's threads on disk (none loaded).
func restarted(t *testing.T, old *harness, opts ...harnessOpt) *harness {
	t.Helper()
	h := newHarnessOn(t, old.st, opts...)
	old.cx.mu.Lock()
	defer old.cx.mu.Unlock()
	for id := range old.cx.known {
		h.cx.known[id] = true
	}
	h.cx.next, h.cx.turnSeq = old.cx.next, old.cx.turnSeq
	return h
}

// ask sends text to lane a and returns the text answering it.
func (h *harness) ask(t *testing.T, id, text string) string {
	t.Helper()
	h.send(t, "a", id, text)
	return h.p.replyTo(t, id).Text
}

func TestProjectShowsTheChoices(t *testing.T) {
	tests := []struct {
		name        string
		buttons     bool
		projects    map[string]string
		want        []string
		wantButtons []string
	}{
		{name: "a list where there are no buttons", projects: testProjects,
			want: []string{"Project: none (default directory " + defaultDir + ")", "• api — /srv/src/api\n• site — /srv/src/site\n", "/project NAME"}},
		{name: "buttons where the platform has them", buttons: true, projects: testProjects,
			want:        []string{"Project: none", "• api — /srv/src/api"},
			wantButtons: []string{"project:api=api", "project:site=site"}},
		{name: "a name too long for a button is listed only", buttons: true,
			projects:    map[string]string{"api": "/a", strings.Repeat("x", 60): "/x"},
			want:        []string{"• " + strings.Repeat("x", 60) + " — /x"},
			wantButtons: []string{"project:api=api"}},
		{name: "nothing configured", projects: nil,
			want: []string{"Project: none (default directory " + defaultDir + ")", "No projects are configured (configuration key projects)."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := newFakeStore()
			h := newHarnessOn(t, st, withProjects(st, tt.projects))
			var bp *buttonPlatform
			if tt.buttons {
				bp = &buttonPlatform{fakePlatform: h.p, buttons: make(chan []Button, 4)}
				h.g.AddPlatform(bp)
			}
			h.start(t)
			got := h.ask(t, "p1", "/project")
			for _, want := range tt.want {
				if !strings.Contains(got, want) {
					t.Errorf("/project answered %q, want it to contain %q", got, want)
				}
			}
			if bp == nil {
				return
			}
			var ids []string
			for _, b := range <-bp.buttons {
				ids = append(ids, b.ID+"="+b.Label)
			}
			if strings.Join(ids, " ") != strings.Join(tt.wantButtons, " ") {
				t.Errorf("buttons %q, want %q", ids, tt.wantButtons)
			}
		})
	}
}

func TestProjectSwitches(t *testing.T) {
	tests := []struct {
		name, command string
		want          string // the answer
		wantProject   string // stored afterwards
	}{
		{"by name", "/project site", "Project: site. This conversation now works in /srv/src/site; the Codex thread is kept.", "site"},
		{"ignoring case", "/project SITE", "Project: site. This conversation now works in /srv/src/site", "site"},
		{"an unknown name is refused with the choices", "/project ../etc", `Unknown project "../etc". Choose one of: api, site.`, ""},
		{"a path is not a name", "/project /srv/src/site", `Unknown project "/srv/src/site". Choose one of: api, site.`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newProjectsHarness(t)
			h.start(t)
			if got := h.ask(t, "m1", "hello"); got != "re: hello" {
				t.Fatalf("first answer %q", got)
			}
			if got := h.ask(t, "p1", tt.command); !strings.Contains(got, tt.want) {
				t.Errorf("%s answered %q, want %q", tt.command, got, tt.want)
			}
			if got := h.st.lane(laneA).Project; got != tt.wantProject {
				t.Errorf("stored project %q, want %q", got, tt.wantProject)
			}
			h.ask(t, "m2", "and now?")
			wantDir := defaultDir
			if tt.wantProject != "" {
				wantDir = testProjects[tt.wantProject]
			}
			if _, turn := h.cx.dirs(); turn != wantDir {
				t.Errorf("turn/start cwd %q, want %q", turn, wantDir)
			}
			if _, _, turns := h.cx.snapshot(); len(turns) != 2 || !strings.HasPrefix(turns[1], "t1:") {
				t.Errorf("turns %v, want both on thread t1 (switching keeps the thread)", turns)
			}
		})
	}
}

func TestProjectWithoutConfiguredProjects(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Thread.Cwd = defaultDir })
	h.start(t)
	want := "No projects are configured (configuration key projects); this conversation works in " + defaultDir + "."
	if got := h.ask(t, "p1", "/project site"); got != want {
		t.Errorf("/project site answered %q, want %q", got, want)
	}
}

func TestProjectSwitchStorageError(t *testing.T) {
	h := newProjectsHarness(t)
	h.start(t)
	h.st.failOn("SetProject", errors.New("disk on fire"))
	if got := h.ask(t, "p1", "/project api"); !strings.Contains(got, "Could not switch the project (storage error)") {
		t.Errorf("/project api answered %q", got)
	}
}

func TestProjectButtonSwitches(t *testing.T) {
	h := newProjectsHarness(t)
	h.start(t)
	press := Inbound{Address: apiAddr("a"), MessageID: "cb1", SenderID: "u1", Callback: "project:api"}
	if _, err := h.g.Deliver(context.Background(), press); err != nil {
		t.Fatal(err)
	}
	if o := h.p.next(t); !strings.Contains(o.Text, "Project: api. This conversation now works in /srv/src/api") {
		t.Errorf("button press answered %q", o.Text)
	}
	h.ask(t, "m1", "hello")
	if ensured, turn := h.cx.dirs(); ensured != "/srv/src/api" || turn != "/srv/src/api" {
		t.Errorf("thread/start cwd %q, turn/start cwd %q; want both /srv/src/api", ensured, turn)
	}
}

// The project is the lane's: /status shows it, and /new, a restart (a
// resume) and compaction all carry its directory.
func TestProjectOutlivesNewAndRestart(t *testing.T) {
	h := newProjectsHarness(t)
	h.start(t)
	h.ask(t, "p1", "/project site")
	h.ask(t, "m1", "hello")
	if st := h.ask(t, "s1", "/status"); !strings.Contains(st, "Project: site (/srv/src/site)\n") {
		t.Errorf("/status %q lacks the project", st)
	}
	if got := h.ask(t, "n1", "/new"); !strings.Contains(got, "It works in project site (/srv/src/site).") {
		t.Errorf("/new answered %q, want it to name the project it keeps", got)
	}
	h.ask(t, "m2", "fresh thread")
	if ensured, turn := h.cx.dirs(); ensured != "/srv/src/site" || turn != "/srv/src/site" {
		t.Errorf("after /new thread/start cwd %q, turn/start cwd %q; want /srv/src/site", ensured, turn)
	}
	h.stop()

	h = restarted(t, h, withProjects(h.st, testProjects))
	h.start(t)
	h.ask(t, "m3", "after the restart")
	if ensures, _, _ := h.cx.snapshot(); len(ensures) != 1 || ensures[0] != "t2" {
		t.Fatalf("ensures %v, want the stored thread t2 resumed", ensures)
	}
	if ensured, turn := h.cx.dirs(); ensured != "/srv/src/site" || turn != "/srv/src/site" {
		t.Errorf("after restart thread/resume cwd %q, turn/start cwd %q; want /srv/src/site", ensured, turn)
	}
	h.stop()

	h = restarted(t, h, withProjects(h.st, testProjects))
	h.start(t)
	h.ask(t, "c1", "/compact")
	if ensured, _ := h.cx.dirs(); ensured != "/srv/src/site" {
		t.Errorf("compaction resumed the thread with cwd %q, want /srv/src/site", ensured)
	}
}

// A stored project that is no longer configured falls back to the default
// directory, and the lane is told once.
func TestProjectNoLongerConfigured(t *testing.T) {
	h := newProjectsHarness(t)
	h.start(t)
	h.ask(t, "p1", "/project site")
	h.stop()

	h = restarted(t, h, withProjects(h.st, map[string]string{"api": "/srv/src/api"}))
	h.start(t)
	h.send(t, "a", "m1", "hello")
	told := `Project "site" is no longer configured; this conversation now works in ` + defaultDir + `. /project shows the choices.`
	var notices []string
	for {
		o := h.p.next(t)
		if o.InReplyTo == "m1" && o.Kind != OutPreview {
			break
		}
		notices = append(notices, o.Text)
	}
	if len(notices) != 1 || notices[0] != told {
		t.Errorf("notices before the answer %q, want exactly %q", notices, told)
	}
	if _, turn := h.cx.dirs(); turn != defaultDir {
		t.Errorf("turn/start cwd %q, want the default %s", turn, defaultDir)
	}
	if got := h.ask(t, "m2", "again"); got != "re: again" {
		t.Errorf("second answer %q", got)
	}
	if st := h.ask(t, "s1", "/status"); !strings.Contains(st, "Project: none (default directory "+defaultDir+")") {
		t.Errorf("/status %q, want no project", st)
	}
}

func TestProjectIsAMenuCommand(t *testing.T) {
	for _, c := range newHarness(t).g.Commands() {
		if c.Name == "project" {
			if !c.Menu || c.Args != "[name]" {
				t.Errorf("project command %+v, want it in the menus with an optional name", c)
			}
			return
		}
	}
	t.Error("no /project in Commands")
}
