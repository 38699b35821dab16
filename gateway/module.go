package gateway

import (
	"context"
	"strings"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/command"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// Features plug into the core as modules. A module is built with what it
// needs (its own narrow store and codex interfaces, the outbox, the clock)
// and, once, registers with the host what it adds: commands, button
// prefixes and hooks around a turn. The core runs the hooks at fixed points
// of a lane's life and names no feature, so a new feature is a new file and
// one line in Gateway.modules. The shape is tailscale's ipn/ipnext: an
// extension gets a host and registers hooks; it is not a method set on the
// core.
type module interface {
	register(h *host)
}

// host is what modules register with. It is filled in New, before Run, and
// read-only afterwards, so the core reads it without locks.
type host struct {
	commands  *command.Set[commandCall]
	callbacks []callbackRoute
	hooks     turnHooks
	usage     usageHooks // ext.UsageHooks beyond the turn hooks (extension_usage.go)
	room      roomHooks  // ext.RoomHooks: a message's text, a room's talk (extension_room.go)
	titles    ext.Titler // names lanes (ext.TitleHooks, extension_title.go); nil: none
	// renamed hear a lane's place renamed on its platform (ext.NameHooks,
	// extension_names.go).
	renamed []func(ctx context.Context, in Inbound)
	// tools are the dynamic tools features offer, by name (ext.Host.Tool).
	tools map[string]func(ctx context.Context, call codex.ToolCall) codex.ToolResult
	// transcribes: a feature transcribes audio before the turn (OnAudio),
	// so intake does not tell the lane it goes untranscribed.
	transcribes bool
	// requests are what features registered for Codex's server requests.
	requests serverRequests
}

func newHost() *host {
	return &host{commands: command.NewSet[commandCall](coreCommands),
		tools: make(map[string]func(ctx context.Context, call codex.ToolCall) codex.ToolResult)}
}

// callbackRoute sends button presses whose id starts with prefix to handle.
type callbackRoute struct {
	prefix string
	handle func(ctx context.Context, in Inbound)
}

// callback registers the handler of buttons whose id starts with prefix.
func (h *host) callback(prefix string, fn func(ctx context.Context, in Inbound)) {
	h.callbacks = append(h.callbacks, callbackRoute{prefix: prefix, handle: fn})
}

// routeCallback hands a button press to the module owning its prefix; one
// nobody owns is logged and dropped (an old button, or a forged one).
func (h *host) routeCallback(ctx context.Context, in Inbound, log *zap.Logger) {
	for _, r := range h.callbacks {
		if strings.HasPrefix(in.Callback, r.prefix) {
			r.handle(ctx, in)
			return
		}
	}
	log.Info("inbound.callback_unknown", zap.String("platform", in.Address.Platform), zap.String("callback", in.Callback))
}

// turnHooks are the points of a lane's life where modules take part, in
// the order the core reaches them. Hooks of one point run in registration
// order.
type turnHooks struct {
	// admit runs in intake before anything of a message is stored: a
	// hook reporting true refused it, and told the sender or returned
	// the error that is Deliver's answer (nothing is stored or run).
	admit []func(ctx context.Context, in Inbound) (refused bool, err error)
	// refuse runs before a queued item is processed; a hook returning
	// true has answered the item and closed it, and it does not run.
	refuse []func(ctx context.Context, l *lane, it item) bool
	// session runs once the turn's lane row is read: it may start a new
	// session (t.sl changes).
	session []func(ctx context.Context, t *turn)
	// prepare runs next, before the thread is loaded: it may choose the
	// turn's working directory (t.dir).
	prepare []func(ctx context.Context, t *turn)
	// thread adjusts the config a lane's thread is started or resumed
	// with (sl is the lane's row, dir its working directory).
	thread []func(sl store.Lane, dir string, cfg *codex.ThreadConfig)
	// ready runs once the thread is loaded, before turn/start.
	ready []func(ctx context.Context, t *turn)
	// input adjusts what turn/start sends.
	input []func(ctx context.Context, t *turn, in *codex.TurnInput)
	// watch starts what watches a turn about to run (its work view).
	watch []func(t *turn) ext.TurnWatcher
	// started runs when codex has started the turn (t.turnID is known),
	// before its first event is handled.
	started []func(ctx context.Context, t *turn)
	// result sees the turn's outcome before it is committed; a hook
	// returning true has taken the turn over (it answered or requeued
	// it) and the core commits nothing.
	result []func(ctx context.Context, t *turn, res codex.TurnResult, err error) bool
	// finished sees a turn that ran to an answer, before its commit.
	finished []func(t *turn, res codex.TurnResult)
	// after runs in the lane's worker once a turn or a task (itemTask) has
	// been processed and committed, before the lane's next item: what the
	// work left behind (files) can be looked at there.
	after []func(ctx context.Context, l *lane, it item)
	// stopped runs when a lane's turn is stopped or its conversation
	// reset (/stop, /new, /reset, an operator's reset).
	stopped []func(sessionKey string)
	// status adds lines to /status for a lane whose row could be read.
	status []func(ctx context.Context, sl store.Lane, b *strings.Builder)
}

// admitted runs the admit hooks and reports whether one refused in,
// with the error Deliver answers (nil: the update is acknowledged).
func (h *host) admitted(ctx context.Context, in Inbound) (refused bool, err error) {
	for _, fn := range h.hooks.admit {
		if refused, err := fn(ctx, in); refused {
			return true, err
		}
	}
	return false, nil
}

// refused runs the refuse hooks and reports whether one answered the item.
func (h *host) refused(ctx context.Context, l *lane, it item) bool {
	for _, fn := range h.hooks.refuse {
		if fn(ctx, l, it) {
			return true
		}
	}
	return false
}

// prepare runs the session and prepare hooks of a turn whose lane row was
// read; dir is the working directory of a lane no module moved.
func (h *host) prepare(ctx context.Context, t *turn, dir string) {
	for _, fn := range h.hooks.session {
		fn(ctx, t)
	}
	t.dir = dir
	for _, fn := range h.hooks.prepare {
		fn(ctx, t)
	}
}

// threadConfig is base as the modules adjust it for a lane working in dir.
func (h *host) threadConfig(sl store.Lane, dir string, base codex.ThreadConfig) codex.ThreadConfig {
	cfg := base
	for _, fn := range h.hooks.thread {
		fn(sl, dir, &cfg)
	}
	return cfg
}

func (h *host) ready(ctx context.Context, t *turn) {
	for _, fn := range h.hooks.ready {
		fn(ctx, t)
	}
}

func (h *host) input(ctx context.Context, t *turn, in *codex.TurnInput) {
	for _, fn := range h.hooks.input {
		fn(ctx, t, in)
	}
}

func (h *host) started(ctx context.Context, t *turn) {
	for _, fn := range h.hooks.started {
		fn(ctx, t)
	}
}

// takenOver runs the result hooks and reports whether one took the turn
// over.
func (h *host) takenOver(ctx context.Context, t *turn, res codex.TurnResult, err error) bool {
	for _, fn := range h.hooks.result {
		if fn(ctx, t, res, err) {
			return true
		}
	}
	return false
}

func (h *host) finished(t *turn, res codex.TurnResult) {
	for _, fn := range h.hooks.finished {
		fn(t, res)
	}
}

// after runs the after hooks of a processed turn or task.
func (h *host) after(ctx context.Context, l *lane, it item) {
	for _, fn := range h.hooks.after {
		fn(ctx, l, it)
	}
}

// stopped tells the modules that the lane's turn was stopped or its
// conversation reset.
func (h *host) stopped(sessionKey string) {
	for _, fn := range h.hooks.stopped {
		fn(sessionKey)
	}
}
