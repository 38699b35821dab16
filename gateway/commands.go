package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// command is a parsed gateway command.
type command struct {
	name string // without the slash and any @botname, lower case
	args string
}

// CommandInfo describes one command the gateway handles itself.
type CommandInfo struct {
	Name        string // without the slash
	Args        string // argument synopsis for /help ("" when none)
	Description string // one line, for /help and the platforms' menus
	// Menu: offered in the platforms' command menus (Telegram
	// setMyCommands, Discord slash commands). Commands that need an
	// argument to be useful are typed instead.
	Menu bool
}

// Commands is the one list of gateway commands, in /help order; the
// platforms build their menus from it. Any other /word goes to Codex as text.
var Commands = []CommandInfo{
	{Name: "new", Description: "Start a fresh Codex thread (same as /reset)", Menu: true},
	{Name: "reset", Description: "Start a fresh Codex thread", Menu: true},
	{Name: "stop", Description: "Interrupt the running reply, keep the thread", Menu: true},
	{Name: "retry", Description: "Run your last message again", Menu: true},
	{Name: "compact", Description: "Compact this conversation's Codex thread", Menu: true},
	{Name: "status", Description: "Show this conversation's thread, usage and queue", Menu: true},
	{Name: "project", Args: "[name]", Description: "Show or switch this conversation's project (working directory)", Menu: true},
	{Name: "verbose", Args: "[off|summary|full]", Description: "Show or set how much of Codex's work is shown while it runs", Menu: true},
	{Name: "model", Args: "[name|default]", Description: "Show or choose this conversation's Codex model", Menu: true},
	{Name: "effort", Args: "[level|default]", Description: "Show or choose the model's reasoning effort", Menu: true},
	{Name: "approve", Args: "[id] [session]", Description: "Allow what Codex asked for"},
	{Name: "deny", Args: "[id]", Description: "Refuse what Codex asked for"},
	{Name: "login", Description: "Log Codex in to ChatGPT with a device code (private chat or API lane only)"},
	{Name: "help", Description: "List commands", Menu: true},
}

// isCommand reports whether name (lower case, no slash) is a gateway command.
func isCommand(name string) bool {
	for _, c := range Commands {
		if c.Name == name {
			return true
		}
	}
	return false
}

// parseCommand recognises "/cmd", "/cmd args" and "/cmd@botname".
func parseCommand(text string) (command, bool) {
	text = strings.TrimSpace(text)
	if !strings.HasPrefix(text, "/") {
		return command{}, false
	}
	word, args, _ := strings.Cut(text[1:], " ")
	word, _, _ = strings.Cut(word, "@")
	word = strings.ToLower(strings.TrimSpace(word))
	if !isCommand(word) {
		return command{}, false
	}
	return command{name: word, args: strings.TrimSpace(args)}, true
}

// laneCommands registers the commands of the lane itself: a fresh
// conversation, stopping and rerunning a turn, its status and the list of
// commands. Commands that act on the lane's state act at once (they must
// not wait behind the turn they control); /retry queues like a message.
func laneCommands(g *Gateway) module {
	return moduleFunc(func(h *host) {
		reset := func(ctx context.Context, c commandCall) bool {
			if err := g.resetLane(ctx, c.lane, "/"+c.name, c.msgID); err != nil {
				g.inbox.set(ctx, c.inboundID, store.InboundFailed)
				return false
			}
			return true
		}
		h.command("new", reset)
		h.command("reset", reset)
		h.command("stop", func(ctx context.Context, c commandCall) bool {
			g.out.notify(ctx, c.lane.addr, c.msgID, g.stop(ctx, c.lane))
			return true
		})
		h.command("retry", func(ctx context.Context, c commandCall) bool {
			if g.retryAfterLimit(ctx, c.lane, c.inboundID, c.msgID) {
				return false
			}
			g.retry(ctx, c.lane, c.inboundID, c.msgID)
			return false // the queued turn marks the inbound done
		})
		h.command("status", func(ctx context.Context, c commandCall) bool {
			g.out.notify(ctx, c.lane.addr, c.msgID, g.status(ctx, c.lane))
			return true
		})
		h.hooks.status = append(h.hooks.status, func(_ context.Context, sl store.Lane, b *strings.Builder) {
			fmt.Fprintf(b, "Session: started %s ago, %d turns\n", roundAge(g.now().Sub(sl.SessionStartedAt)), sl.Turns)
		})
		h.command("help", func(ctx context.Context, c commandCall) bool {
			g.out.notify(ctx, c.lane.addr, c.msgID, helpText())
			return true
		})
	})
}

// moduleFunc is a module written as its registration alone.
type moduleFunc func(h *host)

func (f moduleFunc) register(h *host) { f(h) }

// ResetLane does what /reset does in the lane: a new generation and session,
// the binding cleared, the queue dropped, a running turn interrupted (its
// late result is discarded) and the old thread released.
func (g *Gateway) ResetLane(ctx context.Context, sessionKey string) error {
	l := g.lanes.lookup(sessionKey)
	if l == nil {
		sl, err := g.st.Lane(ctx, sessionKey)
		if err != nil {
			return fmt.Errorf("gateway: reset %s: %w", sessionKey, err)
		}
		l = g.lanes.get(addressOfLane(sl))
	}
	return g.resetLane(ctx, l, "reset by operator", "")
}

func (g *Gateway) resetLane(ctx context.Context, l *lane, reason, replyTo string) error {
	l.mu.Lock()
	var running string
	cur, wasStale := l.cur, l.stale
	if cur != nil {
		cur.discard = true
		running = cur.threadID
	}
	if l.thread != "" {
		l.stale = true
	}
	// The queue is taken now, before the store moves the generation on:
	// were the running turn to end meanwhile, the worker would otherwise
	// run a message sent before /new in the fresh conversation.
	dropped := g.sched.takeQueueLocked(l)
	l.mu.Unlock()
	sl, err := g.st.ResetLane(ctx, l.key, reason)
	if err != nil {
		l.mu.Lock() // nothing was reset: the running turn stays valid
		if cur != nil && l.cur == cur {
			cur.discard = false
		}
		l.stale = wasStale
		l.mu.Unlock()
		g.sched.requeueFront(l, dropped)
		g.log.Error("lane.reset_failed", zap.String("lane", l.key), zap.Error(err))
		g.out.notify(ctx, l.addr, replyTo, "Could not start a new conversation (storage error). Please try again.")
		return fmt.Errorf("gateway: reset %s: %w", l.key, err)
	}
	g.inbox.ignore(ctx, dropped)
	g.host.stopped(l.key)
	if running != "" {
		if err := g.interrupt(ctx, running); err != nil && !errors.Is(err, codex.ErrNoActiveTurn) {
			g.log.Warn("lane.reset_interrupt_failed", zap.String("lane", l.key), zap.Error(err))
		}
	}
	if l.opMu.TryLock() {
		l.mu.Lock()
		free := !l.worker
		l.mu.Unlock()
		if free {
			g.threads.releaseStale(ctx, l)
		}
		l.opMu.Unlock()
	}
	g.log.Info("lane.reset", zap.String("lane", l.key), zap.String("reason", reason), zap.Int("dropped", len(dropped)))
	for _, it := range dropped {
		g.out.notify(ctx, l.addr, replyTarget(it), cancelledNotice)
	}
	started := "Started a new conversation: the next message goes to a fresh Codex thread."
	if sl.Project != "" {
		started += " It works in project " + g.projects.describe(sl.Project) + "."
	}
	g.out.notify(ctx, l.addr, replyTo, started)
	return nil
}

// interrupt asks codex to interrupt a thread's turn, bounded: commands run
// on the platform's delivery goroutine, so a hung app-server must not stall
// every lane of the platform (a stuck Codex is when users send /stop).
func (g *Gateway) interrupt(ctx context.Context, thread string) error {
	ictx, cancel := context.WithTimeout(ctx, g.callTimeout)
	defer cancel()
	return g.cx.Interrupt(ictx, thread)
}

// stop interrupts the lane's running turn and says what happened.
func (g *Gateway) stop(ctx context.Context, l *lane) string {
	l.mu.Lock()
	thread := ""
	if l.cur != nil {
		thread = l.cur.threadID
	}
	l.mu.Unlock()
	g.host.stopped(l.key)
	if thread == "" {
		return "Nothing is running."
	}
	err := g.interrupt(ctx, thread)
	switch {
	case errors.Is(err, codex.ErrNoActiveTurn):
		return "Nothing is running."
	case err != nil:
		g.log.Warn("turn.interrupt_failed", zap.String("lane", l.key), zap.Error(err))
		return "Could not stop the reply: " + briefError(err)
	}
	return "Stopping the current reply."
}

// retry queues the lane's last request again: the turn cut off by a restart
// if there is one (its text is journaled until it runs), else the last user
// message of the session.
func (g *Gateway) retry(ctx context.Context, l *lane, inboundID int64, msgID string) {
	cut, ok, err := g.st.CutOffTurn(ctx, l.key)
	if err != nil {
		g.log.Warn("retry.journal_failed", zap.String("lane", l.key), zap.Error(err))
		g.out.notify(ctx, l.addr, msgID, "Could not look up what to retry (storage error). Please send /retry again.")
		g.inbox.set(ctx, inboundID, store.InboundFailed)
		return
	}
	text := cut.Text
	if !ok {
		text = g.lastUserText(ctx, l.key)
	} else if g.retryQueued(l) {
		g.out.notify(ctx, l.addr, msgID, "The cut-off request is already queued to run again.")
		g.inbox.set(ctx, inboundID, store.InboundDone)
		return
	}
	if text == "" {
		g.out.notify(ctx, l.addr, msgID, "Nothing to retry in this conversation.")
		g.inbox.set(ctx, inboundID, store.InboundDone)
		return
	}
	g.sched.enqueue(ctx, l, item{kind: itemTurn, inboundID: inboundID, msgID: msgID, text: text, retry: ok})
}

// retryQueued reports whether a rerun of the cut-off turn already waits in
// the lane's queue or is starting (its journal entry stays until the rerun
// journals itself).
func (g *Gateway) retryQueued(l *lane) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return (l.cur != nil && l.cur.retry) || l.queue.has(func(it item) bool { return it.retry })
}

func (g *Gateway) lastUserText(ctx context.Context, key string) string {
	msgs, err := g.st.Transcript(ctx, key, 20)
	if err != nil {
		g.log.Warn("retry.transcript_failed", zap.String("lane", key), zap.Error(err))
		return ""
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			return msgs[i].Text
		}
	}
	return ""
}

// status describes the lane for /status.
func (g *Gateway) status(ctx context.Context, l *lane) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Lane: %s\n", l.key)
	sl, err := g.st.Lane(ctx, l.key)
	if err != nil {
		g.log.Warn("status.lane_failed", zap.String("lane", l.key), zap.Error(err))
		b.WriteString("Thread: unknown (storage error)\n")
	} else {
		if sl.ThreadID == "" {
			b.WriteString("Thread: none yet\n")
		} else {
			fmt.Fprintf(&b, "Thread: %s (%s)\n", sl.ThreadID, bindingName(sl.Binding))
		}
		for _, line := range g.host.hooks.status {
			line(ctx, sl, &b)
		}
	}
	l.mu.Lock()
	waiting, running, live := l.queue.len(), l.cur != nil, l.thread != ""
	l.mu.Unlock()
	fmt.Fprintf(&b, "Queue: %d waiting, turn running: %s, thread loaded: %s", waiting, yesNo(running), yesNo(live))
	return b.String()
}

func usageLine(u codex.Usage) string {
	if u.ContextWindow <= 0 {
		return fmt.Sprintf("Context: %d tokens (window unknown); total used %d\n", u.LastTotalTokens, u.TotalTokens)
	}
	pct := float64(u.LastTotalTokens) * 100 / float64(u.ContextWindow)
	return fmt.Sprintf("Context: %d / %d tokens (%.0f%%); total used %d\n", u.LastTotalTokens, u.ContextWindow, pct, u.TotalTokens)
}

func bindingName(b store.Binding) string {
	if b == store.BindingNone {
		return "none"
	}
	return string(b)
}

func roundAge(d time.Duration) time.Duration {
	switch {
	case d < 0:
		return 0
	case d < time.Minute:
		return d.Round(time.Second)
	default:
		return d.Round(time.Minute)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func helpText() string {
	var b strings.Builder
	b.WriteString("Commands:\n")
	for _, c := range Commands {
		name := "/" + c.Name
		if c.Args != "" {
			name += " " + c.Args
		}
		fmt.Fprintf(&b, "%s — %s\n", name, c.Description)
	}
	b.WriteString("Anything else (including other /words) goes to Codex.")
	return b.String()
}
