package workview

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/internal/testclock"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// statusPlatform records status messages and their edits as events.
type statusPlatform struct {
	events  chan string
	buttons bool // it edits with buttons

	mu        sync.Mutex
	limitNext bool // the next Edit is rate limited
}

func newStatusPlatform() *statusPlatform { return &statusPlatform{events: make(chan string, 64)} }

var _ ext.StatusMessages = (*statusPlatform)(nil)

func (p *statusPlatform) Send(_ context.Context, _ chat.Address, replyTo, text string, _ chat.WorkView) (string, error) {
	if replyTo != "m1" {
		p.events <- "status message not replying to the turn's message: " + replyTo
	}
	p.events <- "send:" + text
	return "s1", nil
}

func (p *statusPlatform) Edit(_ context.Context, _ chat.Address, id, text string, _ chat.WorkView) error {
	p.mu.Lock()
	limited := p.limitNext
	p.limitNext = false
	p.mu.Unlock()
	if limited {
		p.events <- "limited:" + text
		return rateLimited{after: 20 * time.Millisecond}
	}
	p.events <- "edit:" + id + ":" + text
	return nil
}

func (p *statusPlatform) EditButtons(_ context.Context, _ chat.Address, id, text string, buttons []chat.Button) (bool, error) {
	if !p.buttons {
		return false, nil
	}
	ids := make([]string, 0, len(buttons))
	for _, b := range buttons {
		ids = append(ids, b.ID)
	}
	p.events <- "buttons:" + id + ":" + text + " [" + strings.Join(ids, " ") + "]"
	return true, nil
}

// rateLimited is a platform's answer to an edit too soon after the last.
type rateLimited struct{ after time.Duration }

func (e rateLimited) Error() string             { return "429" }
func (e rateLimited) RetryAfter() time.Duration { return e.after }

// expect waits for the next event and checks it starts with prefix and
// contains every one of parts.
func (p *statusPlatform) expect(t *testing.T, prefix string, parts ...string) string {
	t.Helper()
	select {
	case got := <-p.events:
		if !strings.HasPrefix(got, prefix) {
			t.Fatalf("platform event %q, want one starting %q", got, prefix)
		}
		for _, s := range parts {
			if !strings.Contains(got, s) {
				t.Fatalf("platform event %q lacks %q", got, s)
			}
		}
		return got
	case <-time.After(5 * time.Second):
		t.Fatalf("no platform event, want %q", prefix)
		return ""
	}
}

func (p *statusPlatform) expectNone(t *testing.T) {
	t.Helper()
	select {
	case e := <-p.events:
		t.Fatalf("unexpected platform event %q", e)
	default:
	}
}

// newView registers the feature with a host whose platform is p and
// starts the work view of a turn in a lane of mode (its own choice).
func newView(t *testing.T, p *statusPlatform, mode string, started time.Time, setup func(h *exttest.Host)) ext.TurnWatcher {
	t.Helper()
	h := exttest.NewHost(t)
	h.Platform, h.Interval = p, time.Second
	if setup != nil {
		setup(h)
	}
	h.Register(t, New("", &fakeStore{}))
	l := &exttest.Lane{Addr: chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}}
	ws := h.Watch(&exttest.Turn{L: l, R: store.Lane{Verbose: mode}}, "m1", started)
	if len(ws) > 1 {
		t.Fatalf("%d watchers, want at most one", len(ws))
	}
	if len(ws) == 0 {
		return nil
	}
	return ws[0]
}

func commandProgress(id, cmd string, exit *int) codex.Progress {
	a := &codex.Action{ID: id, Type: codex.ActionCommand, Command: cmd, Status: "inProgress"}
	if exit != nil {
		a.Status, a.Done, a.ExitCode, a.Duration = "completed", true, exit, 1200*time.Millisecond
	}
	return codex.Progress{Kind: codex.ProgressAction, Action: a}
}

func exitCode(n int) *int { return &n }

// TestWorkViewEditsInPlaceThrottledAndCollapses: the first event sends one
// silent status message at once; later events edit that message, at most
// once per PreviewInterval; Stop collapses it to the summary line.
func TestWorkViewEditsInPlaceThrottledAndCollapses(t *testing.T) {
	clock := testclock.New()
	p := newStatusPlatform()
	ticks := make(chan time.Time)
	w := newView(t, p, config.VerboseSummary, clock.Now(), func(h *exttest.Host) { h.Clock, h.Ticks = clock.Now, ticks })
	w.Progress(codex.Progress{Kind: codex.ProgressPlan, Plan: []codex.PlanStep{
		{Step: "look", Status: codex.StepInProgress}, {Step: "fix", Status: codex.StepPending}}})
	p.expect(t, "send:", "▶️ look", "⬜ fix")
	w.Progress(commandProgress("c1", "echo hi", nil))
	ticks <- time.Time{} // same instant as the send: throttled
	p.expectNone(t)
	clock.Advance(time.Second)
	ticks <- time.Time{}
	edit := p.expect(t, "edit:s1:", "▶️ look", "$ echo hi")
	if strings.Index(edit, "look") > strings.Index(edit, "echo hi") {
		t.Errorf("status %q: want the plan before the actions", edit)
	}
	w.Progress(commandProgress("c1", "echo hi", exitCode(0)))
	w.Progress(codex.Progress{Kind: codex.ProgressAction, Action: &codex.Action{ID: "f1", Type: codex.ActionFileEdit,
		Status: "completed", Done: true, Files: []codex.FileChange{{Path: "/w/a.go", Added: 3, Removed: 1}, {Path: "/w/b.go", Added: 1}}}})
	clock.Advance(time.Second)
	ticks <- time.Time{}
	edit = p.expect(t, "edit:s1:", "✓ $ echo hi → exit 0, 1.2 s", "a.go, b.go (+4 −1)")
	if strings.Count(edit, "echo hi") != 1 {
		t.Errorf("status %q: the completed command must replace its started line", edit)
	}
	w.Stop(clock.Now().Add(39*time.Second), nil) // 41 s after the start
	p.expect(t, "edit:s1:1 command, 2 files changed, 41 s")
	w.Stop(clock.Now(), nil) // idempotent
	p.expectNone(t)
}

// TestWorkViewNothingToShowSendsNothing: a turn without plan or actions
// gets no status message, not even a summary; mode off and a platform
// that does not run make no view.
func TestWorkViewNothingToShowSendsNothing(t *testing.T) {
	p := newStatusPlatform()
	w := newView(t, p, config.VerboseSummary, time.Now(), nil)
	w.Progress(codex.Progress{Kind: codex.ProgressReasoning, Text: "thinking"}) // summary mode ignores it
	w.Stop(time.Now(), nil)
	p.expectNone(t)
	if newView(t, p, config.VerboseOff, time.Now(), nil) != nil {
		t.Error("mode off made a work view")
	}
	if newView(t, p, config.VerboseFull, time.Now(), func(h *exttest.Host) { h.Platform = nil }) != nil {
		t.Error("a platform that does not run got a work view")
	}
}

// TestWorkViewClosingButtons: a turn that ran a command closes with the
// buttons offered for its end where the platform edits with buttons, and
// with the plain summary where it cannot.
func TestWorkViewClosingButtons(t *testing.T) {
	closing := []chat.Button{ext.CommandButton("diff", "Diff"), ext.CommandButton("undo", "Undo")}
	for _, buttons := range []bool{true, false} {
		p := newStatusPlatform()
		p.buttons = buttons
		start := time.Now()
		w := newView(t, p, config.VerboseSummary, start, nil)
		w.Progress(commandProgress("c1", "true", exitCode(0)))
		p.expect(t, "send:", "$ true")
		w.Stop(start.Add(2*time.Second), closing)
		if buttons {
			p.expect(t, "buttons:s1:1 command, 2 s [cmd:diff cmd:undo]")
		} else {
			p.expect(t, "edit:s1:1 command, 2 s")
		}
	}
}

func TestRenderWork(t *testing.T) {
	cmd := chat.WorkAction{ID: "c", Kind: chat.WorkCommand, Title: "go test ./...", Status: "failed", ExitCode: exitCode(1),
		DurationMs: 2500, Output: "ok a\nFAIL b"}
	tests := []struct {
		name       string
		view       chat.WorkView
		full       bool
		want, omit []string
	}{
		{name: "summary hides output and reasoning", view: chat.WorkView{Actions: []chat.WorkAction{cmd}, Reasoning: "pondering"},
			want: []string{"✗ $ go test ./... → exit 1, 2.5 s"}, omit: []string{"FAIL b", "pondering"}},
		{name: "full shows output tail and reasoning", view: chat.WorkView{Actions: []chat.WorkAction{cmd}, Reasoning: "pondering"}, full: true,
			want: []string{"│ FAIL b", "💭 pondering"}},
		{name: "retry notice", view: chat.WorkView{Retry: "Reconnecting... 2/5"}, want: []string{"⏳ Reconnecting... 2/5"}},
		{name: "older actions are counted", view: chat.WorkView{Earlier: 4, Actions: []chat.WorkAction{cmd}}, want: []string{"… 4 earlier"}},
		{name: "web search and tool", view: chat.WorkView{Actions: []chat.WorkAction{
			{Kind: chat.WorkWebSearch, Title: "go generics", Status: "completed"},
			{Kind: chat.WorkMCPTool, Title: "docs/lookup", Status: "failed", Error: "no page"}}},
			want: []string{"✓ 🔎 go generics", "✗ 🔧 docs/lookup: no page"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := renderWork(tc.view, tc.full)
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("renderWork = %q, want it to contain %q", got, w)
				}
			}
			for _, o := range tc.omit {
				if strings.Contains(got, o) {
					t.Errorf("renderWork = %q, want it without %q", got, o)
				}
			}
		})
	}
	if got := renderWork(chat.WorkView{}, true); got != "" {
		t.Errorf("empty view renders %q, want nothing", got)
	}
	long := chat.WorkView{Actions: []chat.WorkAction{{Kind: chat.WorkCommand, Title: strings.Repeat("x", 10000), Status: "completed"}}}
	if n := len([]rune(renderWork(long, true))); n > workTextChars {
		t.Errorf("rendered %d runes, want at most %d", n, workTextChars)
	}
}

func TestSummaryLine(t *testing.T) {
	tests := []struct {
		view chat.WorkView
		want string
	}{
		{chat.WorkView{Commands: 3, Files: 2, ElapsedMs: 41_000}, "3 commands, 2 files changed, 41 s"},
		{chat.WorkView{Commands: 1, Searches: 2, Tools: 1, ElapsedMs: 125_400}, "1 command, 2 web searches, 1 tool call, 2 min 5 s"},
		{chat.WorkView{Plan: []chat.WorkStep{{Status: codex.StepCompleted}, {Status: codex.StepPending}}, ElapsedMs: 900}, "plan 1/2 done, 1 s"},
	}
	for _, tc := range tests {
		if got := summaryLine(tc.view); got != tc.want {
			t.Errorf("summaryLine(%+v) = %q, want %q", tc.view, got, tc.want)
		}
	}
}

// TestWorkViewSummaryRetriedAfterRateLimit: a collapse edit the platform
// rate-limits is retried after the delay it names, without holding Stop.
func TestWorkViewSummaryRetriedAfterRateLimit(t *testing.T) {
	p := newStatusPlatform()
	start := time.Now()
	w := newView(t, p, config.VerboseSummary, start, nil)
	w.Progress(commandProgress("c1", "true", exitCode(0)))
	p.expect(t, "send:", "$ true")
	p.mu.Lock()
	p.limitNext = true
	p.mu.Unlock()
	w.Stop(start.Add(2*time.Second), nil)
	p.expect(t, "limited:1 command, 2 s")
	p.expect(t, "edit:s1:1 command, 2 s")
}

// fakeStore keeps the lanes' work view modes.
type fakeStore struct {
	mu      sync.Mutex
	verbose map[string]string
	err     error // every call's answer when set
}

func (s *fakeStore) Lane(_ context.Context, key string) (store.Lane, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return store.Lane{}, s.err
	}
	return store.Lane{SessionKey: key, Verbose: s.verbose[key]}, nil
}

func (s *fakeStore) SetLaneOption(_ context.Context, key string, opt store.LaneOption, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if opt != store.OptionVerbose {
		return errors.New("not the work view's option")
	}
	if s.verbose == nil {
		s.verbose = map[string]string{}
	}
	s.verbose[key] = value
	return nil
}

// TestVerboseCommand: /verbose shows the default, sets a valid mode in
// any case, refuses an unknown one with the valid values without storing
// it, and says when the store failed.
func TestVerboseCommand(t *testing.T) {
	h, st := exttest.NewHost(t), &fakeStore{}
	h.Register(t, New(config.VerboseFull, st))
	l := &exttest.Lane{Addr: chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}}
	key := l.Key()
	ctx := context.Background()
	steps := []struct{ args, want string }{
		{"", "Work view: full (the default). Set it with /verbose off|summary|full."},
		{"loud", `Unknown work view mode "loud": use one of off, summary, full.`},
		{"OFF", "Work view: off (no status message), from the next message on."},
		{"", "Work view: off. Set it with /verbose off|summary|full."},
	}
	for i, s := range steps {
		if !h.Run(ctx, l, "verbose", s.args, "v") {
			t.Fatalf("/verbose %s did not answer", s.args)
		}
		if n := h.Notices(); len(n) != i+1 || n[i].Text != s.want || n[i].ReplyTo != "v" {
			t.Fatalf("/verbose %q: notices %+v, want %q last", s.args, n, s.want)
		}
		if s.args == "loud" && st.verbose[key] != "" {
			t.Errorf("stored %q after a bad value, want nothing stored", st.verbose[key])
		}
	}
	if st.verbose[key] != config.VerboseOff {
		t.Errorf("stored %q, want off", st.verbose[key])
	}
	if w := h.Watch(&exttest.Turn{L: l, R: store.Lane{Verbose: st.verbose[key]}}, "m1", time.Now()); len(w) != 0 {
		t.Error("a turn of a lane with /verbose off has a work view")
	}
	st.err = store.ErrNotFound
	h.Run(ctx, l, "verbose", "full", "v")
	if n := h.Notices(); !strings.HasPrefix(n[len(n)-1].Text, "Could not save the work view setting") {
		t.Errorf("after a store failure: %q, want it said", n[len(n)-1].Text)
	}
	h.Run(ctx, l, "verbose", "", "v")
	if n := h.Notices(); !strings.HasPrefix(n[len(n)-1].Text, "Could not read this conversation's work view setting") {
		t.Errorf("after a store failure: %q, want it said", n[len(n)-1].Text)
	}
}

// TestUnknownDefaultModeRefused: a default mode config would refuse
// stops the feature from registering, naming the value.
func TestUnknownDefaultModeRefused(t *testing.T) {
	err := New("chatty", &fakeStore{}).Register(exttest.NewHost(t))
	if err == nil || !strings.Contains(err.Error(), "chatty") {
		t.Errorf("Register with verbose chatty: %v, want an error naming it", err)
	}
	if New("", &fakeStore{}).defaultMode != config.Defaults().Lanes.Verbose {
		t.Error("no default mode is not config's default")
	}
}

// A turn answered by another model than asked for says so in its status
// message, live and after it collapsed to the summary.
func TestWorkViewShowsAReroute(t *testing.T) {
	clock := testclock.New()
	p := newStatusPlatform()
	ticks := make(chan time.Time)
	w := newView(t, p, config.VerboseSummary, clock.Now(), func(h *exttest.Host) { h.Clock, h.Ticks = clock.Now, ticks })
	w.Progress(commandProgress("c1", "echo hi", nil))
	p.expect(t, "send:", "$ echo hi")
	w.Progress(codex.Progress{Kind: codex.ProgressReroute, Reroute: &codex.Reroute{From: "gpt-a", To: "gpt-b", Reason: "highRiskCyberActivity"}})
	clock.Advance(time.Second)
	ticks <- time.Time{}
	line := "↪ Answered by gpt-b instead of gpt-a: the request was flagged as high-risk cyber activity."
	p.expect(t, "edit:s1:", "$ echo hi", line)
	w.Progress(commandProgress("c1", "echo hi", exitCode(0)))
	w.Stop(clock.Now().Add(2*time.Second), nil)
	p.expect(t, "edit:s1:1 command, 3 s\n"+line)
}
