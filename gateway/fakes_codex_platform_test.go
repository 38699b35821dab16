package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/runtime/codex"
)

// fakeCodex is an in-process Codex. Threads are "t1", "t2", …; RunTurn calls
// the run hook (default: echo "re: <text>").
type fakeCodex struct {
	mu       sync.Mutex
	next     int
	loaded   map[string]bool
	known    map[string]bool      // threads that exist "on disk"
	ensures  []string             // stored ids passed to EnsureThread
	configs  []codex.ThreadConfig // the config passed with each EnsureThread
	released []string
	turns    []string            // "thread:text"
	cwds     []string            // TurnInput.Cwd of each RunTurn, in order
	confines []codex.Confinement // TurnInput.Confine of each RunTurn, in order
	images   [][]string          // TurnInput.Images of each RunTurn, in order
	ensureFn func(stored string) (codex.Ensured, error)
	run      func(ctx context.Context, thread, text string, ev codex.TurnEvents) (codex.TurnResult, error)
	// starting, when set, runs in RunTurn before codex has the turn (its
	// Started event): a turn/start still on its way.
	starting func(text string)
	modes    []string    // each turn's TurnInput.Mode
	interr   chan string // Interrupt calls
	turnSeq  int
	// optional hooks for the lane policies (nil: defaults below)
	steerFn   func(thread, text string) error
	compactFn func(thread string) (codex.Usage, codex.Usage, error)
	usageFn   func(thread string) (codex.Usage, bool)
	compacts  []string // threads compacted
	// interruptFn, when set, decides what Interrupt returns (after the
	// call is recorded on interr).
	interruptFn func(ctx context.Context, thread string) error
	// reviewFn, when set, runs RunReview (/review) instead of failing it.
	reviewFn func(ctx context.Context, thread string, target codex.ReviewTarget, ev codex.TurnEvents) (codex.TurnResult, error)
}

func newFakeCodex() *fakeCodex {
	return &fakeCodex{loaded: map[string]bool{}, known: map[string]bool{}, interr: make(chan string, 16)}
}

func (c *fakeCodex) newThread() string {
	c.next++
	id := "t" + strconv.Itoa(c.next)
	c.known[id], c.loaded[id] = true, true
	return id
}

func (c *fakeCodex) EnsureThread(_ context.Context, stored string, cfg codex.ThreadConfig) (codex.Ensured, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ensures = append(c.ensures, stored)
	c.configs = append(c.configs, cfg)
	if c.ensureFn != nil {
		return c.ensureFn(stored)
	}
	switch {
	case stored == "":
		return codex.Ensured{ThreadID: c.newThread(), Outcome: codex.OutcomeStarted}, nil
	case c.loaded[stored]:
		return codex.Ensured{ThreadID: stored, Outcome: codex.OutcomeLoaded}, nil
	case c.known[stored]:
		c.loaded[stored] = true
		return codex.Ensured{ThreadID: stored, Outcome: codex.OutcomeResumed}, nil
	}
	return codex.Ensured{ThreadID: c.newThread(), Outcome: codex.OutcomeReplaced, PreviousID: stored,
		Reason: "no rollout found"}, nil
}

func (c *fakeCodex) RunTurn(ctx context.Context, thread string, in codex.TurnInput, ev codex.TurnEvents) (codex.TurnResult, error) {
	text := in.Text
	c.mu.Lock()
	if !c.loaded[thread] {
		c.mu.Unlock()
		return codex.TurnResult{}, fmt.Errorf("turn/start: %w", codex.ErrThreadNotLoaded)
	}
	c.turns = append(c.turns, thread+":"+text)
	c.cwds = append(c.cwds, in.Cwd)
	c.confines = append(c.confines, in.Confine)
	c.images = append(c.images, in.Images)
	c.modes = append(c.modes, in.Mode)
	c.turnSeq++
	turnID := "turn" + strconv.Itoa(c.turnSeq)
	run, starting := c.run, c.starting
	c.mu.Unlock()
	if starting != nil {
		starting(text)
	}
	if ev.Started != nil {
		ev.Started(turnID)
	}
	if run != nil {
		res, err := run(ctx, thread, text, ev)
		if res.TurnID == "" {
			res.TurnID = turnID
		}
		res.ThreadID = thread
		return res, err
	}
	if ev.Delta != nil {
		ev.Delta("re: ")
		ev.Delta(text)
	}
	return codex.TurnResult{ThreadID: thread, TurnID: turnID, Status: codex.TurnCompleted, Text: "re: " + text,
		Items: []codex.Item{{Type: "userMessage", Text: text}, {Type: "agentMessage", Text: "re: " + text}}}, nil
}

func (c *fakeCodex) Interrupt(ctx context.Context, thread string) error {
	c.interr <- thread
	if c.interruptFn != nil {
		return c.interruptFn(ctx, thread)
	}
	return nil
}

func (c *fakeCodex) Compact(_ context.Context, thread string) (codex.Usage, codex.Usage, error) {
	c.mu.Lock()
	c.compacts = append(c.compacts, thread)
	fn := c.compactFn
	c.mu.Unlock()
	if fn != nil {
		return fn(thread)
	}
	return codex.Usage{LastTotalTokens: 100}, codex.Usage{LastTotalTokens: 10}, nil
}

func (c *fakeCodex) Steer(_ context.Context, thread, text string) error {
	c.mu.Lock()
	fn := c.steerFn
	c.mu.Unlock()
	if fn != nil {
		return fn(thread, text)
	}
	return fmt.Errorf("fake: %w", codex.ErrNoActiveTurn)
}

func (c *fakeCodex) Release(_ context.Context, thread string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.loaded, thread)
	c.released = append(c.released, thread)
	return nil
}

// ThreadUsage answers as codex does without a ChatGPT account.
func (c *fakeCodex) ThreadUsage(context.Context, string) (codex.ThreadCost, bool, error) {
	return codex.ThreadCost{}, false, errors.New("fake: codex account authentication required to read token usage")
}

func (c *fakeCodex) Usage(thread string) (codex.Usage, bool) {
	c.mu.Lock()
	fn := c.usageFn
	c.mu.Unlock()
	if fn != nil {
		return fn(thread)
	}
	return codex.Usage{LastTotalTokens: 1200, TotalTokens: 5000, ContextWindow: 200000}, true
}

func (c *fakeCodex) snapshot() (ensures, released, turns []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.ensures...), append([]string(nil), c.released...), append([]string(nil), c.turns...)
}

// fakePlatform records what the gateway sends: messages and files on out,
// in order; a turn's transient display (streamed previews, work view
// status messages and their edits) on shown, so tests reading out see what
// stays in the chat. It implements the whole Platform, as every adapter
// does; tests of one capability wrap it.
type fakePlatform struct {
	name   string
	out    chan Outbound
	ready  chan struct{} // closed: the fake connects at once
	mu     sync.Mutex
	sendFn func(Outbound) (string, error)
	allow  func(Inbound) bool
	seq    int
	shown  []string // "send:<kind>:<text>", "edit:<id>:<text>"; guarded by mu
	places int      // places opened (OpenPlace)
}

func newFakePlatform() *fakePlatform {
	ready := make(chan struct{})
	close(ready)
	return &fakePlatform{name: "test", out: make(chan Outbound, 1024), ready: ready}
}

var _ Platform = (*fakePlatform)(nil)

func (p *fakePlatform) Name() string { return p.name }

func (p *fakePlatform) Ready() <-chan struct{} { return p.ready }

func (p *fakePlatform) Run(ctx context.Context, _ Sink) error {
	<-ctx.Done()
	return nil
}

func (p *fakePlatform) Send(_ context.Context, out Outbound) (string, error) {
	if out.Kind == OutPreview || out.Kind == OutProgress {
		return p.show(out), nil
	}
	p.mu.Lock()
	fn := p.sendFn
	p.seq++
	id := "m" + strconv.Itoa(p.seq)
	p.mu.Unlock()
	if fn != nil {
		if _, err := fn(out); err != nil {
			return "", err
		}
	}
	p.out <- out
	return id, nil
}

// show records a preview or status message; its id is of its own series,
// so the ids of the messages on out do not depend on how often a turn's
// display happened to tick.
func (p *fakePlatform) show(out Outbound) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shown = append(p.shown, "send:"+string(out.Kind)+":"+out.Text)
	return "shown" + strconv.Itoa(len(p.shown))
}

// Edit records the edit of a preview or status message.
func (p *fakePlatform) Edit(_ context.Context, _ Address, id, text string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.shown = append(p.shown, "edit:"+id+":"+text)
	return nil
}

// SendFile delivers a file row like a message: on out, with its File.
func (p *fakePlatform) SendFile(ctx context.Context, out Outbound) (string, error) {
	return p.Send(ctx, out)
}

// OpenPlace opens a new API-like lane beside near.
func (p *fakePlatform) OpenPlace(_ context.Context, near Address, _ string) (Address, error) {
	p.mu.Lock()
	p.places++
	n := p.places
	p.mu.Unlock()
	return Address{Platform: near.Platform, Kind: LaneAPI, ChatID: near.ChatID + "-fork" + strconv.Itoa(n)}, nil
}

func (p *fakePlatform) Authorize(in Inbound) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.allow == nil || p.allow(in)
}

// next waits for the next outbound the platform receives.
func (p *fakePlatform) next(t testing.TB) Outbound {
	t.Helper()
	select {
	case o := <-p.out:
		return o
	case <-time.After(5 * time.Second):
		t.Fatal("timed out waiting for an outbound message")
		return Outbound{}
	}
}

// replyTo waits for the outbound answering message id, skipping others.
func (p *fakePlatform) replyTo(t testing.TB, id string) Outbound {
	t.Helper()
	for {
		if o := p.next(t); o.InReplyTo == id && o.Kind != OutPreview && o.Kind != OutProgress {
			return o
		}
	}
}
