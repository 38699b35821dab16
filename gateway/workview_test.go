package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// workPlatform records status messages, their edits and replies as events.
type workPlatform struct {
	*fakePlatform
	events    chan string
	limitNext bool // the next Edit is rate limited (guarded by mu)
}

func newWorkPlatform(base *fakePlatform) *workPlatform {
	return &workPlatform{fakePlatform: base, events: make(chan string, 64)}
}

func (p *workPlatform) Send(ctx context.Context, out Outbound) (string, error) {
	switch out.Kind {
	case OutProgress:
		if !out.Silent || out.Progress == nil {
			p.events <- "loud or unstructured status message"
		}
		p.events <- "send:" + out.Text
		return "s1", nil
	case OutPreview:
		return "p1", nil
	}
	p.events <- "reply:" + out.Text
	return p.fakePlatform.Send(ctx, out)
}

func (p *workPlatform) Edit(_ context.Context, _ Address, id, text string) error {
	p.mu.Lock()
	limited := p.limitNext
	p.limitNext = false
	p.mu.Unlock()
	if limited {
		p.events <- "limited:" + text
		return &RetryAfterError{After: 20 * time.Millisecond, Err: errors.New("429")}
	}
	p.events <- "edit:" + id + ":" + text
	return nil
}

// expect waits for the next event and checks it starts with prefix and
// contains every one of parts.
func (p *workPlatform) expect(t *testing.T, prefix string, parts ...string) string {
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

func (p *workPlatform) expectNone(t *testing.T) {
	t.Helper()
	select {
	case e := <-p.events:
		t.Fatalf("unexpected platform event %q", e)
	default:
	}
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
// once per PreviewInterval; stop collapses it to the summary line.
func TestWorkViewEditsInPlaceThrottledAndCollapses(t *testing.T) {
	clock := newFakeClock()
	p := newWorkPlatform(newFakePlatform())
	g, err := New(Config{Logger: zaptest.NewLogger(t), Now: clock.Now}.WithDefaults(), newFakeStore(), newFakeCodex())
	if err != nil {
		t.Fatal(err)
	}
	g.AddPlatform(p)
	ticks := make(chan time.Time)
	g.newTicker = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	w := g.present.newWorkView(apiAddr("a"), "m1", VerboseSummary, clock.Now())
	w.progress(codex.Progress{Kind: codex.ProgressPlan, Plan: []codex.PlanStep{
		{Step: "look", Status: codex.StepInProgress}, {Step: "fix", Status: codex.StepPending}}})
	p.expect(t, "send:", "▶️ look", "⬜ fix")
	w.progress(commandProgress("c1", "echo hi", nil))
	ticks <- time.Time{} // same instant as the send: throttled
	p.expectNone(t)
	clock.Advance(time.Second)
	ticks <- time.Time{}
	edit := p.expect(t, "edit:s1:", "▶️ look", "$ echo hi")
	if strings.Index(edit, "look") > strings.Index(edit, "echo hi") {
		t.Errorf("status %q: want the plan before the actions", edit)
	}
	w.progress(commandProgress("c1", "echo hi", exitCode(0)))
	w.progress(codex.Progress{Kind: codex.ProgressAction, Action: &codex.Action{ID: "f1", Type: codex.ActionFileEdit,
		Status: "completed", Done: true, Files: []codex.FileChange{{Path: "/w/a.go", Added: 3, Removed: 1}, {Path: "/w/b.go", Added: 1}}}})
	clock.Advance(time.Second)
	ticks <- time.Time{}
	edit = p.expect(t, "edit:s1:", "✓ $ echo hi → exit 0, 1.2 s", "a.go, b.go (+4 −1)")
	if strings.Count(edit, "echo hi") != 1 {
		t.Errorf("status %q: the completed command must replace its started line", edit)
	}
	w.stop(clock.Now().Add(39 * time.Second)) // 41 s after the start
	p.expect(t, "edit:s1:1 command, 2 files changed, 41 s")
	w.stop(clock.Now()) // idempotent
	p.expectNone(t)
}

// TestWorkViewNothingToShowSendsNothing: a turn without plan or actions
// gets no status message, not even a summary.
func TestWorkViewNothingToShowSendsNothing(t *testing.T) {
	p := newWorkPlatform(newFakePlatform())
	g, err := New(Config{Logger: zaptest.NewLogger(t)}.WithDefaults(), newFakeStore(), newFakeCodex())
	if err != nil {
		t.Fatal(err)
	}
	g.AddPlatform(p)
	w := g.present.newWorkView(apiAddr("a"), "m1", VerboseSummary, time.Now())
	w.progress(codex.Progress{Kind: codex.ProgressReasoning, Text: "thinking"}) // summary mode ignores it
	w.stop(time.Now())
	p.expectNone(t)
	if g.present.newWorkView(apiAddr("a"), "m1", VerboseOff, time.Now()) != nil {
		t.Error("mode off made a work view")
	}
}

func TestRenderWork(t *testing.T) {
	cmd := WorkAction{ID: "c", Kind: WorkCommand, Title: "go test ./...", Status: "failed", ExitCode: exitCode(1),
		DurationMs: 2500, Output: "ok a\nFAIL b"}
	tests := []struct {
		name       string
		view       WorkView
		full       bool
		want, omit []string
	}{
		{name: "summary hides output and reasoning", view: WorkView{Actions: []WorkAction{cmd}, Reasoning: "pondering"},
			want: []string{"✗ $ go test ./... → exit 1, 2.5 s"}, omit: []string{"FAIL b", "pondering"}},
		{name: "full shows output tail and reasoning", view: WorkView{Actions: []WorkAction{cmd}, Reasoning: "pondering"}, full: true,
			want: []string{"│ FAIL b", "💭 pondering"}},
		{name: "retry notice", view: WorkView{Retry: "Reconnecting... 2/5"}, want: []string{"⏳ Reconnecting... 2/5"}},
		{name: "older actions are counted", view: WorkView{Earlier: 4, Actions: []WorkAction{cmd}}, want: []string{"… 4 earlier"}},
		{name: "web search and tool", view: WorkView{Actions: []WorkAction{
			{Kind: WorkWebSearch, Title: "go generics", Status: "completed"},
			{Kind: WorkMCPTool, Title: "docs/lookup", Status: "failed", Error: "no page"}}},
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
	if got := renderWork(WorkView{}, true); got != "" {
		t.Errorf("empty view renders %q, want nothing", got)
	}
	long := WorkView{Actions: []WorkAction{{Kind: WorkCommand, Title: strings.Repeat("x", 10000), Status: "completed"}}}
	if n := len([]rune(renderWork(long, true))); n > workTextChars {
		t.Errorf("rendered %d runes, want at most %d", n, workTextChars)
	}
}

func TestSummaryLine(t *testing.T) {
	tests := []struct {
		view WorkView
		want string
	}{
		{WorkView{Commands: 3, Files: 2, ElapsedMs: 41_000}, "3 commands, 2 files changed, 41 s"},
		{WorkView{Commands: 1, Searches: 2, Tools: 1, ElapsedMs: 125_400}, "1 command, 2 web searches, 1 tool call, 2 min 5 s"},
		{WorkView{Plan: []WorkStep{{Status: codex.StepCompleted}, {Status: codex.StepPending}}, ElapsedMs: 900}, "plan 1/2 done, 1 s"},
	}
	for _, tc := range tests {
		if got := summaryLine(tc.view); got != tc.want {
			t.Errorf("summaryLine(%+v) = %q, want %q", tc.view, got, tc.want)
		}
	}
}

// TestTurnStatusCollapsedBeforeReply: through the gateway, a turn's
// progress becomes one status message; when the turn ends it collapses to
// the summary before the reply, which stays a separate message.
func TestTurnStatusCollapsedBeforeReply(t *testing.T) {
	h := newHarness(t)
	p := newWorkPlatform(h.p)
	h.g.platforms["test"] = p
	shown := make(chan struct{})
	h.cx.run = func(_ context.Context, _, _ string, ev codex.TurnEvents) (codex.TurnResult, error) {
		ev.Progress(commandProgress("c1", "make test", nil))
		<-shown
		ev.Progress(commandProgress("c1", "make test", exitCode(0)))
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "all green"}, nil
	}
	h.start(t)
	h.send(t, "a", "m1", "run the tests")
	p.expect(t, "send:", "$ make test")
	close(shown)
	p.expect(t, "edit:s1:1 command, ")
	p.expect(t, "reply:all green")
}

// A turn that ends before its first status message went out still gets
// the summary, as one new message, before the reply.
func TestFastTurnGetsItsSummary(t *testing.T) {
	h := newHarness(t)
	p := newWorkPlatform(h.p)
	h.g.platforms["test"] = p
	h.cx.run = func(_ context.Context, _, _ string, ev codex.TurnEvents) (codex.TurnResult, error) {
		ev.Progress(commandProgress("c1", "make test", nil))
		ev.Progress(commandProgress("c1", "make test", exitCode(0)))
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "all green"}, nil
	}
	h.start(t)
	h.send(t, "a", "m1", "run the tests")
	if first := p.expect(t, "send:"); !strings.Contains(first, "1 command, ") { // it showed the command first
		p.expect(t, "edit:s1:1 command, ")
	}
	p.expect(t, "reply:all green")
}

// TestVerboseCommand: /verbose shows the default, sets a valid mode (which
// the next turn uses: off sends no status message), and refuses an unknown
// one with the valid values without storing it.
func TestVerboseCommand(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Verbose = VerboseFull })
	p := newWorkPlatform(h.p)
	h.g.platforms["test"] = p
	h.cx.run = func(_ context.Context, _, _ string, ev codex.TurnEvents) (codex.TurnResult, error) {
		ev.Progress(commandProgress("c1", "ls", exitCode(0)))
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "listed"}, nil
	}
	h.start(t)
	h.send(t, "a", "v1", "/verbose")
	p.expect(t, "reply:Work view: full (the default).")
	h.send(t, "a", "v2", "/verbose loud")
	p.expect(t, "reply:Unknown work view mode \"loud\"", "off, summary, full")
	if l, _ := h.st.Lane(context.Background(), apiAddr("a").SessionKey()); l.Verbose != "" {
		t.Errorf("stored verbose %q after a bad value, want nothing stored", l.Verbose)
	}
	h.send(t, "a", "v3", "/verbose OFF")
	p.expect(t, "reply:Work view: off")
	if l, _ := h.st.Lane(context.Background(), apiAddr("a").SessionKey()); l.Verbose != VerboseOff {
		t.Errorf("stored verbose %q, want off", l.Verbose)
	}
	h.send(t, "a", "m1", "list files")
	p.expect(t, "reply:listed") // no status message before it
	h.send(t, "a", "v4", "/verbose")
	p.expect(t, "reply:Work view: off.")
}

// TestVerboseStoreFailureStoresNothing: a storage error is reported, and
// the lane keeps its mode.
func TestVerboseStoreFailureStoresNothing(t *testing.T) {
	h := newHarness(t)
	p := newWorkPlatform(h.p)
	h.g.platforms["test"] = p
	h.start(t)
	h.st.failOn("SetLaneOption", store.ErrNotFound)
	h.send(t, "a", "v1", "/verbose full")
	p.expect(t, "reply:Could not save the work view setting")
}

func TestConfigRejectsUnknownVerbose(t *testing.T) {
	_, err := New(Config{Verbose: "chatty"}.WithDefaults(), newFakeStore(), newFakeCodex())
	if err == nil || !strings.Contains(err.Error(), "chatty") {
		t.Errorf("New with verbose chatty: %v, want an error naming it", err)
	}
}

// TestWorkViewSummaryRetriedAfterRateLimit: a collapse edit the platform
// rate-limits is retried after the delay it names, without holding stop.
func TestWorkViewSummaryRetriedAfterRateLimit(t *testing.T) {
	p := newWorkPlatform(newFakePlatform())
	g, err := New(Config{Logger: zaptest.NewLogger(t)}.WithDefaults(), newFakeStore(), newFakeCodex())
	if err != nil {
		t.Fatal(err)
	}
	g.AddPlatform(p)
	start := time.Now()
	w := g.present.newWorkView(apiAddr("a"), "m1", VerboseSummary, start)
	w.progress(commandProgress("c1", "true", exitCode(0)))
	p.expect(t, "send:", "$ true")
	p.mu.Lock()
	p.limitNext = true
	p.mu.Unlock()
	w.stop(start.Add(2 * time.Second))
	p.expect(t, "limited:1 command, 2 s")
	p.expect(t, "edit:s1:1 command, 2 s")
}
