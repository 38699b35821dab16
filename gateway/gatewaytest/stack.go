// Package gatewaytest runs the real gatewayd stack in a test: a SQLite
// store in a temp directory, the real codex app-server pointed at the fake
// model, and a gateway with the platforms under test. A Stack is one
// "process"; starting a second Stack on the same World after stopping the
// first is a daemon restart.
package gatewaytest

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/features"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
	"github.com/gatewayd/gatewayd/store"
)

// World is what outlives a restart: the fake model, CODEX_HOME, the database
// file and the working directory.
type World struct {
	Model *codextest.Model
	Home  string
	DB    string
	Work  string
	// TurnTimeout is the client's turn watchdog (0: its default); a turn
	// it stops becomes the lane's turn to /retry.
	TurnTimeout time.Duration
	// Features configures the feature packages of a gateway started with
	// no Config.Features (the zero value: the daemon's defaults).
	Features features.Settings
}

// NewWorld makes a fresh world in t's temp directories.
func NewWorld(t testing.TB) *World {
	dir := t.TempDir()
	return &World{Model: codextest.NewModel(t), Home: codextest.Home(t),
		DB: filepath.Join(dir, "gatewayd.db"), Work: dir}
}

// Stack is one running gatewayd: store, codex client and gateway.
type Stack struct {
	Store   *store.Store
	Codex   *codex.Client
	Gateway *gateway.Gateway
	stop    context.CancelFunc
	done    chan error
	stopped bool
}

// Start opens the store, starts the real app-server and runs a gateway with
// the platforms that platforms builds (they may use the store as their
// cursor store). It returns once the gateway is ready; Stop is registered
// with t.Cleanup, so a test may also stop the stack itself to restart.
func (w *World) Start(t testing.TB, ctx context.Context, cfg gateway.Config, platforms func(st *store.Store) []gateway.Platform) *Stack {
	t.Helper()
	log := zaptest.NewLogger(t)
	st, err := store.Open(ctx, w.DB, store.Options{Logger: log})
	if err != nil {
		t.Fatalf("store.Open: %v", err)
	}
	// Dynamic tools (send_file) are routed to the gateway once it exists,
	// as the daemon does.
	var late atomic.Pointer[gateway.Gateway]
	tool := func(ctx context.Context, call codex.ToolCall) codex.ToolResult {
		if g := late.Load(); g != nil {
			return g.ToolCall(ctx, call)
		}
		return codex.ToolResult{Text: "not ready"}
	}
	approve := func(ctx context.Context, req codex.ApprovalRequest) codex.Decision {
		if g := late.Load(); g != nil {
			return g.Approve(ctx, req)
		}
		return codex.DecisionDecline
	}
	ask := func(ctx context.Context, req codex.UserInputRequest) (map[string][]string, bool) {
		if g := late.Load(); g != nil {
			return g.AskUser(ctx, req)
		}
		return nil, false
	}
	cx, err := codex.Start(ctx, codex.Options{Command: codextest.CodexBinary(t), Args: codextest.Args(w.Model.URL),
		Home: w.Home, Env: codextest.Env(), Dir: w.Work, StartTimeout: 20 * time.Second, Logger: log, ToolCall: tool,
		Approvals: approve, UserInput: ask, TurnTimeout: w.TurnTimeout})
	if err != nil {
		_ = st.Close()
		t.Fatalf("codex.Start: %v", err)
	}
	if cfg.Features == nil {
		cfg.Features = features.List(w.Features, st, cx)
	}
	if cfg.Thread.Cwd == "" {
		cfg.Thread.Cwd = w.Work
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = 20 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = log
	}
	g, err := gateway.New(cfg.WithDefaults(), st, cx)
	if err != nil {
		t.Fatalf("gateway.New: %v", err)
	}
	late.Store(g)
	for _, p := range platforms(st) {
		g.AddPlatform(p)
	}
	runCtx, cancel := context.WithCancel(ctx)
	s := &Stack{Store: st, Codex: cx, Gateway: g, stop: cancel, done: make(chan error, 1)}
	go func() { s.done <- g.Run(runCtx) }()
	t.Cleanup(func() { s.Stop(t) })
	select {
	case <-g.Ready():
	case err := <-s.done:
		t.Fatalf("gateway stopped before it was ready: %v", err)
	case <-ctx.Done():
		t.Fatal("gateway not ready in time")
	}
	return s
}

// Stop shuts the gateway down as SIGTERM would (drain, flush the outbox),
// then closes the app-server and the store. It is idempotent.
func (s *Stack) Stop(t testing.TB) {
	t.Helper()
	if s.stopped {
		return
	}
	s.stopped = true
	s.stop()
	if err := <-s.done; err != nil {
		t.Errorf("gateway.Run: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Codex.Close(ctx); err != nil && !errors.Is(err, codex.ErrClosed) {
		t.Errorf("codex close: %v", err)
	}
	if err := s.Store.Close(); err != nil {
		t.Errorf("store close: %v", err)
	}
}

// WaitIdle waits until no lane has work running or queued: a turn's
// answer may show in its streamed preview before the turn ends, and a
// command sent then would find the lane busy. The gateway signals no
// such moment, so this polls.
func (s *Stack) WaitIdle(t testing.TB, timeout time.Duration) {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(timeout)
	for {
		if st := s.Gateway.Stats(); st.ActiveLanes == 0 && st.QueuedMessages == 0 {
			return
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatalf("gatewaytest: lanes still busy after %s: %+v", timeout, s.Gateway.Stats())
		}
	}
}
