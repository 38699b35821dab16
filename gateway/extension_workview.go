package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// The core's side of ext.WorkViewHooks and ext.CommandHooks: the turns a
// work view watches, the platforms' status messages, and commands run
// from a button.

// workViewServices are what those hooks use of the core.
type workViewServices struct {
	previewInterval time.Duration
	ticker          *tickerFunc // the gateway's: tests replace it after New
	obs             Observer
	deliver         func(ctx context.Context, in Inbound) (bool, error) // intake's (built before the features register)
}

// extWorkViewHooks is a feature's host's ext.WorkViewHooks: the turns a
// work view watches and the platforms it shows them on.
type extWorkViewHooks struct{ *extCore }

var _ ext.WorkViewHooks = extWorkViewHooks{}

// extCommandHooks is a feature's host's ext.CommandHooks: commands run
// from elsewhere than their typed message.
type extCommandHooks struct{ *extCore }

var _ ext.CommandHooks = extCommandHooks{}

func newWorkViewServices(g *Gateway) workViewServices {
	return workViewServices{previewInterval: g.cfg.PreviewInterval, ticker: &g.newTicker, obs: g.cfg.Observer,
		deliver: g.in.deliver}
}

func (e extWorkViewHooks) OnWatch(fn func(t ext.Turn, replyTo string, started time.Time) ext.TurnWatcher) {
	e.h.hooks.watch = append(e.h.hooks.watch, func(t *turn) ext.TurnWatcher {
		return fn(e.turn(t), t.it.msgID, t.started)
	})
}

func (e extWorkViewHooks) StatusMessages(platform string) (ext.StatusMessages, bool) {
	p, ok := e.platforms[platform]
	if !ok {
		return nil, false
	}
	return statusMessages{p: p, obs: e.views.obs}, true
}

func (e extWorkViewHooks) PreviewInterval() time.Duration { return e.views.previewInterval }

func (e extWorkViewHooks) Ticker(d time.Duration) (<-chan time.Time, func()) {
	return (*e.views.ticker)(d)
}

func (e extCommandHooks) HasCommand(name string) bool { return e.h.commands.Has(name) }

func (e extCommandHooks) Deliver(ctx context.Context, in chat.Inbound) (bool, error) {
	return e.views.deliver(ctx, in)
}

// OfferOnClose offers buttons with the turn's end (ext.Turn).
func (x extTurn) OfferOnClose(buttons ...chat.Button) {
	x.t.work.offerOnClose(x.core.h.commandButtons(buttons...))
}

// statusMessages is a platform as a turn's status message uses it; a
// failure is counted as the platform's unless its request was cancelled.
type statusMessages struct {
	p   Platform
	obs Observer
}

func (s statusMessages) Send(ctx context.Context, addr chat.Address, replyTo, text string, v chat.WorkView) (string, error) {
	id, err := s.p.Send(ctx, Outbound{Address: addr, Kind: OutProgress, Text: text, Silent: true,
		ReplyTo: replyTo, InReplyTo: replyTo, Progress: &v})
	s.count(ctx, addr, "progress", err)
	return id, err
}

func (s statusMessages) Edit(ctx context.Context, addr chat.Address, id, text string, v chat.WorkView) error {
	var err error
	if pe, ok := s.p.(ProgressEditor); ok {
		err = pe.EditProgress(ctx, addr, id, text, v)
	} else {
		err = s.p.Edit(ctx, addr, id, text)
	}
	s.count(ctx, addr, "edit", err)
	return err
}

func (s statusMessages) EditButtons(ctx context.Context, addr chat.Address, id, text string, buttons []chat.Button) (bool, error) {
	be, ok := s.p.(ButtonEditor)
	if !ok {
		return false, nil
	}
	err := be.EditButtons(ctx, addr, id, text, buttons)
	s.count(ctx, addr, "edit", err)
	return true, err
}

func (s statusMessages) count(ctx context.Context, addr chat.Address, kind string, err error) {
	if err != nil && ctx.Err() == nil {
		s.obs.PlatformError(addr.Platform, kind)
	}
}

// watch starts what the features watch of the turn t (host.hooks.watch).
func (h *host) watch(t *turn) *turnWork {
	w := &turnWork{}
	for _, fn := range h.hooks.watch {
		if tw := fn(t); tw != nil {
			w.watchers = append(w.watchers, tw)
		}
	}
	return w
}

// turnWork is what watches a turn (its work view), and the buttons its
// end offers. Its methods are safe on nil (a turn not yet watched).
type turnWork struct {
	watchers []ext.TurnWatcher
	mu       sync.Mutex
	closing  []Button
}

// progress hands a codex event to every watcher.
func (w *turnWork) progress(p codex.Progress) {
	if w == nil {
		return
	}
	for _, tw := range w.watchers {
		tw.Progress(p)
	}
}

// offerOnClose gives the turn's end buttons, shown if the turn ran
// commands or changed files.
func (w *turnWork) offerOnClose(buttons []Button) {
	if w == nil || len(buttons) == 0 {
		return
	}
	w.mu.Lock()
	w.closing = append(w.closing, buttons...)
	w.mu.Unlock()
}

// stop ends every watch before the reply goes out; idempotent.
func (w *turnWork) stop(end time.Time) {
	if w == nil {
		return
	}
	w.mu.Lock()
	closing := w.closing
	w.mu.Unlock()
	for _, tw := range w.watchers {
		tw.Stop(end, closing)
	}
}

// commandButton is a button running the command name.
func commandButton(name, label string) Button { return ext.CommandButton(name, label) }

// commandButtons are those of buttons that are no command button or run
// a command the gateway has.
func (h *host) commandButtons(buttons ...Button) []Button {
	var out []Button
	for _, b := range buttons {
		if name, ok := ext.CommandOfButton(b); !ok || h.commands.Has(name) {
			out = append(out, b)
		}
	}
	return out
}
