package workview

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// workFinalTimeout bounds the closing edit: the reply waits for it.
const workFinalTimeout = 5 * time.Second

// view shows one turn's work as one status message, sent silently and
// edited in place at most once per PreviewInterval. Codex's events only
// update the state under mu; every platform call happens on the view's own
// goroutine, so event delivery never waits for a platform.
type view struct {
	sm       ext.StatusMessages
	host     ext.Host
	log      *zap.Logger
	addr     chat.Address
	replyTo  string
	full     bool
	started  time.Time
	interval time.Duration // the least time between two edits

	mu    sync.Mutex
	state workState
	dirty bool
	// closing are the buttons the closing line offers when the turn
	// ran commands or changed files (Diff, Undo), on platforms that edit
	// with buttons.
	closing []chat.Button

	// owned by the loop goroutine
	msgID    string
	lastEdit time.Time
	lastText string

	wake chan struct{} // capacity 1
	quit chan struct{}
	done chan struct{}
	once sync.Once
}

// start starts the work view of a turn at addr in mode, or returns nil
// when the mode is off or the lane's platform is not running.
func (f *Feature) start(addr chat.Address, replyTo, mode string, started time.Time) *view {
	sm, ok := f.host.StatusMessages(addr.Platform)
	if mode == config.VerboseOff || !ok {
		return nil
	}
	v := &view{sm: sm, host: f.host, log: f.log, addr: addr, replyTo: replyTo, full: mode == config.VerboseFull,
		started: started, interval: f.host.PreviewInterval(),
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	v.state.index, v.state.files = map[string]int{}, map[string]bool{}
	go v.loop()
	return v
}

// Progress folds one codex event into the view; it never blocks on the
// platform.
func (v *view) Progress(p codex.Progress) {
	v.mu.Lock()
	changed := v.state.apply(p, v.full)
	if changed {
		v.dirty = true
	}
	v.mu.Unlock()
	if changed {
		select {
		case v.wake <- struct{}{}:
		default:
		}
	}
}

// Stop ends the view when the turn's reply is about to be sent: the status
// message collapses to the summary line, with the closing buttons, before
// the reply goes out, so the API lane's answer can carry it. Idempotent.
func (v *view) Stop(end time.Time, closing []chat.Button) {
	v.once.Do(func() {
		v.mu.Lock()
		final := v.state.view(end.Sub(v.started))
		final.Done, final.Summary = true, summaryLine(final)
		final.Actions, final.Earlier, final.Reasoning, final.Retry = nil, 0, "", ""
		v.state.final = &final
		v.closing = closing
		v.mu.Unlock()
		close(v.quit)
		<-v.done
	})
}

func (v *view) loop() {
	defer close(v.done)
	tick, stopTick := v.host.Ticker(max(v.interval/4, 10*time.Millisecond))
	defer stopTick()
	ctx, cancel := context.WithCancel(v.host.Context())
	defer cancel()
	for {
		select {
		case <-v.quit:
			cancel() // an edit in flight must not hold the reply back
			v.collapse()
			return
		case <-v.wake:
			v.flush(ctx, v.host.Now())
		case <-tick:
			v.flush(ctx, v.host.Now())
		}
	}
}

// flush shows the latest state when the platform's edit rate allows: the
// first version at once, later ones PreviewInterval apart.
func (v *view) flush(ctx context.Context, now time.Time) {
	if v.msgID != "" && now.Sub(v.lastEdit) < v.interval {
		return
	}
	v.mu.Lock()
	if !v.dirty {
		v.mu.Unlock()
		return
	}
	v.dirty = false
	wv := v.state.view(now.Sub(v.started))
	v.mu.Unlock()
	text := renderWork(wv, v.full)
	if text == "" || text == v.lastText {
		return
	}
	v.lastEdit = now
	_ = v.show(ctx, text, wv) // counted and logged; the next change tries again
}

// collapse edits the status message to the summary line. A turn that did
// nothing worth showing never had a status message and gets none; one that
// ended before its first version went out gets the summary as that first
// message.
func (v *view) collapse() {
	v.mu.Lock()
	final := *v.state.final
	shown := renderWork(v.state.view(0), v.full) != ""
	buttons := v.closing
	v.mu.Unlock()
	if v.msgID == "" && !shown {
		return
	}
	ctx, cancel := context.WithTimeout(v.host.Context(), workFinalTimeout)
	defer cancel()
	if len(buttons) > 0 && final.Files+final.Commands > 0 && v.msgID != "" {
		ok, err := v.sm.EditButtons(ctx, v.addr, v.msgID, finalText(final), buttons)
		if ok && err == nil {
			return
		}
		if ok {
			v.failed(ctx, "edit", err) // without its buttons the line is still the summary: edit it plain
		}
	}
	if after, ok := ext.RetryAfter(v.show(ctx, finalText(final), final)); ok && after <= workFinalTimeout {
		// The last edit came just before: the summary must not be lost to
		// the edit rate, but the reply must not wait for it either.
		go v.collapseLater(after, final)
	}
}

// collapseLater retries the summary edit once the platform allows it. The
// loop has ended, so this goroutine owns the view's message fields.
func (v *view) collapseLater(after time.Duration, final chat.WorkView) {
	t := time.NewTimer(after)
	defer t.Stop()
	base := v.host.Context()
	select {
	case <-t.C:
	case <-base.Done():
		return
	}
	ctx, cancel := context.WithTimeout(base, workFinalTimeout)
	defer cancel()
	_ = v.show(ctx, finalText(final), final)
}

// show sends the status message the first time and edits it afterwards.
// Failures are logged here (the core counts them); the error is for
// collapse.
func (v *view) show(ctx context.Context, text string, wv chat.WorkView) error {
	if v.msgID == "" {
		id, err := v.sm.Send(ctx, v.addr, v.replyTo, text, wv)
		if err != nil {
			v.failed(ctx, "progress", err)
			return err
		}
		v.msgID, v.lastText = id, text
		return nil
	}
	if err := v.sm.Edit(ctx, v.addr, v.msgID, text, wv); err != nil {
		v.failed(ctx, "edit", err)
		return err
	}
	v.lastText = text
	return nil
}

func (v *view) failed(ctx context.Context, kind string, err error) {
	if ctx.Err() != nil {
		return
	}
	v.log.Debug("workview."+kind+"_failed", zap.String("platform", v.addr.Platform), zap.Error(err))
}
