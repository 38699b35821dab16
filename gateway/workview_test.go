package gateway

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/feature/workview"
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

func commandProgress(id, cmd string, exit *int) codex.Progress {
	a := &codex.Action{ID: id, Type: codex.ActionCommand, Command: cmd, Status: "inProgress"}
	if exit != nil {
		a.Status, a.Done, a.ExitCode, a.Duration = "completed", true, exit, 1200*time.Millisecond
	}
	return codex.Progress{Kind: codex.ProgressAction, Action: a}
}

func exitCode(n int) *int { return &n }

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
	st := newFakeStore()
	h := newHarnessOn(t, st, withFeature(workview.New(config.VerboseFull, st)))
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
	if l, _ := h.st.Lane(context.Background(), apiAddr("a").SessionKey()); l.Verbose != config.VerboseOff {
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

// TestConfigRejectsUnknownVerbose: a gateway whose work view has a
// default mode config would refuse does not start, and says which.
func TestConfigRejectsUnknownVerbose(t *testing.T) {
	st := newFakeStore()
	_, err := New(Config{Features: []ext.Feature{workview.New("chatty", st)}}.WithDefaults(), st, newFakeCodex())
	if err == nil || !strings.Contains(err.Error(), "chatty") {
		t.Errorf("New with verbose chatty: %v, want an error naming it", err)
	}
}

// TestStatusMessagesOfAPlatform: the core sends a turn's status message
// silently, structured and as a reply; edits it through Platform.Edit
// where the platform has no ProgressEditor; offers no button edit where
// it has no ButtonEditor; names a rate limit's wait (ext.RetryAfter); and
// counts a failure as the platform's, unless its request was cancelled.
func TestStatusMessagesOfAPlatform(t *testing.T) {
	obs := &countingObserver{counts: map[string]int{}}
	h := newHarness(t, func(c *Config) { c.Observer = obs })
	p := newWorkPlatform(h.p)
	h.g.platforms["test"] = p
	eh := newExtHost(&extCore{h: h.g.host, platforms: h.g.platforms, views: newWorkViewServices(h.g)}, nil)
	if _, ok := eh.StatusMessages("discord"); ok {
		t.Error("status messages of a platform that does not run")
	}
	sm, ok := eh.StatusMessages("test")
	if !ok {
		t.Fatal("no status messages of the running platform")
	}
	ctx, addr := context.Background(), apiAddr("a")
	view := WorkView{Commands: 1}
	if id, err := sm.Send(ctx, addr, "m1", "$ ls", view); id != "s1" || err != nil {
		t.Fatalf("Send = %q, %v", id, err)
	}
	p.expect(t, "send:$ ls")
	if err := sm.Edit(ctx, addr, "s1", "✓ $ ls", view); err != nil {
		t.Fatal(err)
	}
	p.expect(t, "edit:s1:✓ $ ls")
	if ok, err := sm.EditButtons(ctx, addr, "s1", "1 command", []Button{commandButton("diff", "Diff")}); ok || err != nil {
		t.Errorf("EditButtons on a platform without ButtonEditor = %v, %v; want nothing tried", ok, err)
	}
	p.mu.Lock()
	p.limitNext = true
	p.mu.Unlock()
	err := sm.Edit(ctx, addr, "s1", "1 command", view)
	if after, ok := ext.RetryAfter(err); !ok || after != 20*time.Millisecond {
		t.Errorf("RetryAfter(%v) = %v, %v; want the platform's 20ms", err, after, ok)
	}
	p.expect(t, "limited:1 command")
	if n := obs.get("perr:test:edit"); n != 1 {
		t.Errorf("%d edit errors counted, want 1", n)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	p.mu.Lock()
	p.limitNext = true
	p.mu.Unlock()
	_ = sm.Edit(cancelled, addr, "s1", "1 command", view)
	p.expect(t, "limited:1 command")
	if n := obs.get("perr:test:edit"); n != 1 {
		t.Errorf("%d edit errors counted after a cancelled one, want still 1", n)
	}
}
