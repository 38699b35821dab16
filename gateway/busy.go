package gateway

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/gatewayd/gatewayd/gateway/outbox"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// Busy input: what a message does when it arrives while its lane's turn
// runs. queue (the default) waits its turn; interrupt stops the running turn
// (its partial reply is finalised as interrupted) and runs next; steer adds
// the message to the running turn with turn/steer and falls back to queue
// when codex has no turn to steer (it just ended).

// Notices of the busy modes.
const (
	queuedNotice      = "Queued: I will answer after the current reply."
	interruptedNotice = "Stopping the current reply; I will answer your new message next."
	steeredNotice     = "Added to the reply in progress."
)

// steerTimeout bounds one turn/steer call (it answers in milliseconds).
const steerTimeout = 10 * time.Second

// steerLog collects the messages steered into one turn. Its mutex orders a
// steer against the turn's commit: once closed (the commit took the list),
// no message can be steered into the turn any more, so every steered message
// is recorded by exactly that commit.
type steerLog struct {
	mu     sync.Mutex
	closed bool
	inputs []store.SteeredInput
	// senders are who sent each of inputs (id and name), so a message
	// requeued from it (a usage-limit pause) is still their turn.
	senders [][2]string
}

// close ends steering and returns the steered messages.
func (s *steerLog) close() []store.SteeredInput {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return s.inputs
}

// sender is who sent the i-th steered message (id, name).
func (s *steerLog) sender(i int) (id, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.senders[i][0], s.senders[i][1]
}

// busyPolicy applies lanes.busy_mode to a message that arrives while its
// lane's turn runs.
type busyPolicy struct {
	mode string
	cx   interface {
		Interrupt(ctx context.Context, threadID string) error
		Steer(ctx context.Context, threadID, text string) error
	}
	out         *outbox.Courier
	log         *zap.Logger
	base        context.Context
	callTimeout time.Duration // bounds one interrupt or steer call
}

// input applies the busy mode to a message for a lane whose turn runs.
// It reports true when the message was handled (steered); otherwise the
// caller queues it.
func (b *busyPolicy) input(ctx context.Context, l *lane, it item) bool {
	switch b.mode {
	case BusyInterrupt:
		b.supersede(ctx, l)
		return false
	case BusySteer:
		return b.steer(ctx, l, it)
	}
	return false
}

// supersede interrupts the lane's running turn (busy mode interrupt). A
// turn whose codex turn has not begun yet is marked so it never starts or is
// interrupted as soon as it does.
func (b *busyPolicy) supersede(ctx context.Context, l *lane) {
	thread, ok := l.supersede()
	if !ok {
		return
	}
	b.log.Info("busy.interrupt", zap.String("lane", l.key), zap.String("thread", thread))
	if thread == "" {
		return
	}
	ictx, cancel := context.WithTimeout(ctx, b.callTimeout)
	defer cancel()
	if err := b.cx.Interrupt(ictx, thread); err != nil && !errors.Is(err, codex.ErrNoActiveTurn) {
		b.log.Warn("busy.interrupt_failed", zap.String("lane", l.key), zap.Error(err))
	}
}

// interruptIfSuperseded is the turn's Started hook: a supersede that came
// before codex knew the turn (so its Interrupt found nothing) takes effect
// now. It runs on its own goroutine: Interrupt waits for the turn id, which
// the client publishes around this callback.
func (b *busyPolicy) interruptIfSuperseded(l *lane, cur *turnState, thread string) {
	if !cur.isSuperseded() {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(b.base, b.callTimeout)
		defer cancel()
		if err := b.cx.Interrupt(ctx, thread); err != nil && !errors.Is(err, codex.ErrNoActiveTurn) {
			b.log.Warn("busy.interrupt_failed", zap.String("lane", l.key), zap.Error(err))
		}
	}()
}

// steer adds the message to the lane's running turn. It reports false when
// there is no turn to steer (the caller queues the message).
func (b *busyPolicy) steer(ctx context.Context, l *lane, it item) bool {
	cur, thread := l.steerTarget()
	if cur == nil || len(it.images) > 0 { // a steer carries text only: images wait for their own turn
		return false
	}
	return b.steerInto(ctx, l, cur, thread, it)
}

// steerEdit steers the edit of the running turn's own message into it,
// whatever waits behind it (edits.go).
func (b *busyPolicy) steerEdit(ctx context.Context, l *lane, msgID, text string) bool {
	wctx, cancel := context.WithTimeout(ctx, b.callTimeout)
	cur, thread := l.editTarget(wctx, msgID)
	cancel()
	if cur == nil {
		return false
	}
	return b.steerInto(ctx, l, cur, thread, item{kind: itemTurn, msgID: msgID + "#edited", text: text})
}

// steerInto sends it into the running turn cur on thread and records it
// with the turn; false when codex took nothing.
func (b *busyPolicy) steerInto(ctx context.Context, l *lane, cur *turnState, thread string, it item) bool {
	cur.steer.mu.Lock()
	if cur.steer.closed {
		cur.steer.mu.Unlock()
		return false
	}
	sctx, cancel := context.WithTimeout(ctx, b.callTimeout)
	err := b.cx.Steer(sctx, thread, it.text)
	cancel()
	if err == nil {
		cur.steer.inputs = append(cur.steer.inputs, store.SteeredInput{Text: it.text, MessageID: it.msgID, InboundID: it.inboundID})
		cur.steer.senders = append(cur.steer.senders, [2]string{it.requester, it.requesterName})
	}
	cur.steer.mu.Unlock()
	switch {
	case err == nil:
		b.log.Info("busy.steered", zap.String("lane", l.key), zap.String("thread", thread))
		b.out.Notify(ctx, l.addr, it.msgID, steeredNotice)
		return true
	case errors.Is(err, codex.ErrNoActiveTurn):
		b.log.Info("busy.steer_no_turn_queued", zap.String("lane", l.key))
	default:
		b.log.Warn("busy.steer_failed_queued", zap.String("lane", l.key), zap.Error(err))
	}
	return false
}
