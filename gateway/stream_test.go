package gateway

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway/feature/sendfile"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// editPlatform records typing, previews and edits as events.
type editPlatform struct {
	*fakePlatform
	events chan string
}

func (p *editPlatform) Send(ctx context.Context, out Outbound) (string, error) {
	if out.Kind == OutPreview {
		p.events <- "send:" + out.Text
		return "p1", nil
	}
	return p.fakePlatform.Send(ctx, out)
}

func (p *editPlatform) Edit(_ context.Context, _ Address, id, text string) error {
	p.events <- "edit:" + id + ":" + text
	return nil
}

func (p *editPlatform) Typing(context.Context, Address) error {
	p.events <- "typing"
	return nil
}

func (p *editPlatform) expect(t *testing.T, want string) {
	t.Helper()
	select {
	case got := <-p.events:
		if got != want {
			t.Fatalf("platform event %q, want %q", got, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("no platform event, want %q", want)
	}
}

func TestStreamerThrottlesEditsAndRefreshesTyping(t *testing.T) {
	clock := newFakeClock()
	p := &editPlatform{fakePlatform: newFakePlatform(), events: make(chan string, 64)}
	g, err := New(Config{Logger: zaptest.NewLogger(t), Now: clock.Now}.WithDefaults(), newFakeStore(), newFakeCodex())
	if err != nil {
		t.Fatal(err)
	}
	g.AddPlatform(p)
	ticks := make(chan time.Time)
	g.newTicker = func(time.Duration) (<-chan time.Time, func()) { return ticks, func() {} }
	s := g.present.newStreamer(apiAddr("a"), "m1", time.Time{})
	p.expect(t, "typing") // at once
	s.Delta("Hel")
	ticks <- time.Time{}
	p.expect(t, "send:Hel")
	s.Delta("lo")
	ticks <- time.Time{} // same instant: throttled
	clock.Advance(time.Second)
	ticks <- time.Time{}
	p.expect(t, "edit:p1:Hello")
	clock.Advance(3 * time.Second)
	ticks <- time.Time{} // 4 s since the first typing, nothing new to show
	p.expect(t, "typing")
	if id := s.Stop(); id != "p1" {
		t.Errorf("preview id %q, want p1", id)
	}
	select {
	case e := <-p.events:
		t.Errorf("unexpected event %q", e)
	default:
	}
}

func TestFinalReplyReplacesPreview(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.PreviewInterval = time.Millisecond })
	p := &editPlatform{fakePlatform: h.p, events: make(chan string, 64)}
	h.g.platforms["test"] = p
	streamed := make(chan struct{})
	h.cx.run = func(_ context.Context, _, _ string, ev codex.TurnEvents) (codex.TurnResult, error) {
		ev.Delta("partial")
		<-streamed
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "partial and final"}, nil
	}
	h.start(t)
	h.send(t, "a", "m1", "go")
	for e := range p.events {
		if e == "send:partial" {
			break
		}
	}
	close(streamed)
	if o := h.p.replyTo(t, "m1"); o.EditID != "p1" || o.Text != "partial and final" {
		t.Errorf("final reply %+v, want it to edit preview p1", o)
	}
}

func (p *editPlatform) Delete(_ context.Context, _ Address, id string) error {
	p.events <- "delete:" + id
	return nil
}

// A turn that sends a file cannot let its reply replace a preview streamed
// before the file: the reply is posted after the file, the preview stops
// where it was when the file was sent and is deleted once the turn is
// committed.
func TestReplyAfterSentFileIsANewMessage(t *testing.T) {
	root := t.TempDir()
	work := filepath.Join(root, "work")
	if err := os.MkdirAll(work, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(work, "notes.txt"), []byte("notes"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) {
		c.PreviewInterval, c.TypingInterval = time.Millisecond, time.Hour
		c.Files = files.New(filepath.Join(root, "files"), files.Limits{}, nil)
		c.Thread.Cwd = work
	})
	p := &editPlatform{fakePlatform: h.p, events: make(chan string, 64)}
	h.g.platforms["test"] = p
	// The streamer's ticks are the test's; the gateway's other periodic
	// work never ticks.
	streamTicks := make(chan time.Time)
	h.g.newTicker = func(d time.Duration) (<-chan time.Time, func()) {
		if d == 10*time.Millisecond {
			return streamTicks, func() {}
		}
		return nil, func() {}
	}
	tick := func() {
		h.clock.Advance(time.Second)
		streamTicks <- h.clock.Now()
		streamTicks <- h.clock.Now() // taken only once the first tick is done
	}
	streamed, previewed, finish := make(chan struct{}), make(chan struct{}), make(chan struct{})
	sent := make(chan codex.ToolResult, 1)
	h.cx.run = func(ctx context.Context, thread, _ string, ev codex.TurnEvents) (codex.TurnResult, error) {
		ev.Delta("Sending it")
		streamed <- struct{}{}
		<-previewed
		args, _ := json.Marshal(map[string]string{"path": "notes.txt"})
		sent <- h.g.ToolCall(ctx, codex.ToolCall{ThreadID: thread, Tool: sendfile.Tool, Arguments: args})
		ev.Delta(" now. Here are the notes.")
		streamed <- struct{}{}
		<-finish
		return codex.TurnResult{Status: codex.TurnCompleted, Text: "Here are the notes."}, nil
	}
	h.start(t)
	h.send(t, "a", "m1", "send the notes")
	<-streamed
	tick()
	if e := <-p.events; e == "typing" { // at once, then hourly
		p.expect(t, "send:Sending it")
	} else if e != "send:Sending it" {
		t.Fatalf("platform event %q, want the preview", e)
	}
	close(previewed)
	if res := <-sent; !res.Success {
		t.Fatalf("send_file refused: %s", res.Text)
	}
	<-streamed
	tick() // would edit the preview with the text after the file
	close(finish)
	if file := <-h.p.out; file.File == nil || file.File.Name != "notes.txt" {
		t.Fatalf("first delivery %+v, want the file", file)
	}
	reply := <-h.p.out
	if reply.Kind != OutReply || reply.EditID != "" || reply.Text != "Here are the notes." {
		t.Errorf("reply %+v, want a new message after the file", reply)
	}
	var seen []string
	for len(p.events) > 0 {
		seen = append(seen, <-p.events)
	}
	if !slices.Contains(seen, "delete:p1") {
		t.Errorf("platform events after the file %q, want the preview p1 deleted", seen)
	}
	for _, e := range seen {
		if strings.HasPrefix(e, "edit:") {
			t.Errorf("preview edited after the file was sent: %q", e)
		}
	}
}
