package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/outbox"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// register adds the commands of the lane itself: a fresh conversation,
// stopping and rerunning a turn, its status and the list of commands.
// Commands that act on the lane's state act at once (they must not wait
// behind the turn they control); /retry queues like a message.
func (c *controls) register(h *host) {
	reset := func(ctx context.Context, call commandCall) bool {
		if err := c.resetLane(ctx, call.lane, "/"+call.name, call.msgID); err != nil {
			c.inbox.set(ctx, call.inboundID, store.InboundFailed)
			return false
		}
		return true
	}
	h.command("new", reset)
	h.command("reset", reset)
	h.command("stop", func(ctx context.Context, call commandCall) bool {
		c.out.Notify(ctx, call.lane.addr, call.msgID, c.stop(ctx, call.lane))
		return true
	})
	h.command("retry", func(ctx context.Context, call commandCall) bool {
		if c.retryAfterLimit(ctx, call) {
			return true // a feature answered it (the end of a usage pause)
		}
		c.retry(ctx, call)
		return false // the queued turn marks the inbound done
	})
	h.command("status", func(ctx context.Context, call commandCall) bool {
		c.out.Notify(ctx, call.lane.addr, call.msgID, c.status(ext.WithStatusAsker(ctx, call.sender), call.lane))
		return true
	})
	h.hooks.status = append(h.hooks.status, func(_ context.Context, sl store.Lane, b *strings.Builder) {
		fmt.Fprintf(b, "Session: started %s ago, %d turns\n", roundAge(c.now().Sub(sl.SessionStartedAt)), sl.Turns)
	})
	h.command("help", func(ctx context.Context, call commandCall) bool {
		c.out.Notify(ctx, call.lane.addr, call.msgID, c.host.commands.HelpText())
		return true
	})
}

// controls are the lane's own commands (register) and what they do to it.
type controls struct {
	st controlStore
	cx interface {
		Interrupt(ctx context.Context, threadID string) error
	}
	lanes       *laneTable
	sched       *scheduler
	threads     *threadCache
	host        *host
	out         *outbox.Courier
	inbox       inbox
	log         *zap.Logger
	now         func() time.Time
	callTimeout time.Duration // bounds an interrupt made on a platform's delivery goroutine

	// Parts of modules the commands use: the words for a lane's project
	// (the feature that places lanes) and the features' answer to /retry
	// (a usage pause).
	describeProject func(sl store.Lane) string
	retryAfterLimit func(ctx context.Context, call commandCall) bool
}

// controlStore is the part of the store the lane's commands use.
type controlStore interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	ResetLane(ctx context.Context, sessionKey, reason string) (store.Lane, error)
	RetryTurn(ctx context.Context, sessionKey string) (store.RetryTurn, bool, error)
}

var _ controlStore = (*store.Store)(nil)

// resetByKey resets the lane of sessionKey as an operator asked.
func (c *controls) resetByKey(ctx context.Context, sessionKey string) error {
	l := c.lanes.lookup(sessionKey)
	if l == nil {
		sl, err := c.st.Lane(ctx, sessionKey)
		if err != nil {
			return fmt.Errorf("gateway: reset %s: %w", sessionKey, err)
		}
		l = c.lanes.get(addressOfLane(sl))
	}
	return c.resetLane(ctx, l, "reset by operator", "")
}

// resetLane is /new and /reset: a new generation and session, the binding
// cleared, the queue dropped, a running turn interrupted (its late result
// is discarded) and the old thread released.
func (c *controls) resetLane(ctx context.Context, l *lane, reason, replyTo string) error {
	// The queue is taken now, before the store moves the generation on:
	// were the running turn to end meanwhile, the worker would otherwise
	// run a message sent before /new in the fresh conversation.
	running, dropped, undo := l.discardWork(c.sched.takeQueueLocked)
	sl, err := c.st.ResetLane(ctx, l.key, reason)
	if err != nil {
		undo() // nothing was reset: the running turn stays valid
		c.sched.requeueFront(l, dropped)
		c.log.Error("lane.reset_failed", zap.String("lane", l.key), zap.Error(err))
		c.out.Notify(ctx, l.addr, replyTo, "Could not start a new conversation (storage error). Please try again.")
		return fmt.Errorf("gateway: reset %s: %w", l.key, err)
	}
	c.inbox.ignore(ctx, dropped)
	c.host.stopped(l.key)
	if running != "" {
		if err := c.interrupt(ctx, running); err != nil && !errors.Is(err, codex.ErrNoActiveTurn) {
			c.log.Warn("lane.reset_interrupt_failed", zap.String("lane", l.key), zap.Error(err))
		}
	}
	if l.opMu.TryLock() {
		if !l.snapshot().worker {
			c.threads.releaseStale(ctx, l)
		}
		l.opMu.Unlock()
	}
	c.log.Info("lane.reset", zap.String("lane", l.key), zap.String("reason", reason), zap.Int("dropped", len(dropped)))
	for _, it := range dropped {
		c.out.Notify(ctx, l.addr, replyTarget(it), cancelledNotice)
	}
	started := "Started a new conversation: the next message goes to a fresh Codex thread."
	if sl.Project != "" {
		started += " It works in project " + c.describeProject(sl) + "."
	}
	c.out.Notify(ctx, l.addr, replyTo, started)
	return nil
}

// interrupt asks codex to interrupt a thread's turn, bounded: commands run
// on the platform's delivery goroutine, so a hung app-server must not stall
// every lane of the platform (a stuck Codex is when users send /stop).
func (c *controls) interrupt(ctx context.Context, thread string) error {
	ictx, cancel := context.WithTimeout(ctx, c.callTimeout)
	defer cancel()
	return c.cx.Interrupt(ictx, thread)
}

// stop interrupts the lane's running turn and says what happened.
func (c *controls) stop(ctx context.Context, l *lane) string {
	thread := l.snapshot().curThread
	c.host.stopped(l.key)
	if thread == "" {
		return "Nothing is running."
	}
	err := c.interrupt(ctx, thread)
	switch {
	case errors.Is(err, codex.ErrNoActiveTurn):
		return "Nothing is running."
	case err != nil:
		c.log.Warn("turn.interrupt_failed", zap.String("lane", l.key), zap.Error(err))
		return "Could not stop the reply: " + briefError(err)
	}
	return "Stopping the current reply."
}

// status describes the lane for /status.
func (c *controls) status(ctx context.Context, l *lane) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Lane: %s\n", l.key)
	sl, err := c.st.Lane(ctx, l.key)
	if err != nil {
		c.log.Warn("status.lane_failed", zap.String("lane", l.key), zap.Error(err))
		b.WriteString("Thread: unknown (storage error)\n")
	} else {
		if sl.ThreadID == "" {
			b.WriteString("Thread: none yet\n")
		} else {
			fmt.Fprintf(&b, "Thread: %s (%s)\n", sl.ThreadID, bindingName(sl.Binding))
		}
		for _, line := range c.host.hooks.status {
			line(ctx, sl, &b)
		}
	}
	now := l.snapshot()
	fmt.Fprintf(&b, "Queue: %d waiting, turn running: %s, thread loaded: %s", now.queued, yesNo(now.running), yesNo(now.thread != ""))
	return b.String()
}

func bindingName(b store.Binding) string {
	if b == store.BindingNone {
		return "none"
	}
	return string(b)
}

// roundAge is an age as the lane is told it (chat.Age).
func roundAge(d time.Duration) time.Duration { return chat.Age(d) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
