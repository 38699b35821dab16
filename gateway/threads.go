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

// /threads, /attach ID and /handoff: the lane and the Codex CLI
// or an IDE on the same CODEX_HOME share threads. /threads lists the
// threads of the lane's project (its checkout, where a terminal session
// starts, and the lane's worktree), whoever started them; /attach binds
// the lane to one of those and resumes it, pending like any new binding
// until a turn completes on it (every lane's agent may be hostile,
// so /attach reaches no further than /threads shows): refused for a thread
// not listed for the lane's project, one another lane holds, and one another
// lane let go of (/reset, /new, rotation, a replaced thread: its history is
// that conversation's); the database checks the last two again in the same
// write. /handoff releases the lane's thread
// from the app-server and prints the command that continues it in a
// terminal. The lane's binding stays, so its next message resumes the
// thread with what the terminal added.

const (
	threadsListMax  = 20
	threadsMatchMax = 200 // threads /attach looks through for a prefix
)

type threadLinks struct {
	st interface {
		Lane(ctx context.Context, sessionKey string) (store.Lane, error)
		ThreadClaim(ctx context.Context, threadID, exceptKey string) (store.ThreadClaim, error)
		AttachThread(ctx context.Context, sessionKey string, gen int64, threadID string) error
	}
	cx       threadListRuntime
	loader   *threadLoader
	threads  *threadCache
	projects *projects
	wt       *worktrees
	sched    *scheduler
	out      *deliverer
	inbox    inbox
	log      *zap.Logger
	now      func() time.Time
	home     string // CODEX_HOME, for the terminal's command ("": not named)
}

// threadListRuntime is what these commands use of codex.
type threadListRuntime interface {
	ListThreads(ctx context.Context, f codex.ThreadFilter) ([]codex.ThreadSummary, error)
	EnsureThread(ctx context.Context, storedID string, cfg codex.ThreadConfig) (codex.Ensured, error)
	Release(ctx context.Context, threadID string) error
}

var _ threadListRuntime = (*codex.Client)(nil)

func (tl *threadLinks) register(h *host) {
	h.command("threads", func(ctx context.Context, c commandCall) bool {
		tl.out.notify(ctx, c.lane.addr, c.msgID, tl.list(ctx, c.lane))
		return true
	})
	h.command("attach", func(ctx context.Context, c commandCall) bool {
		if c.args == "" {
			tl.out.notify(ctx, c.lane.addr, c.msgID, "Usage: /attach ID — a thread id from /threads, or the start of one.")
			return true
		}
		return betweenTurns(ctx, c, tl.sched, tl.out, tl.attachTask)
	})
	h.command("handoff", func(ctx context.Context, c commandCall) bool {
		return betweenTurns(ctx, c, tl.sched, tl.out, tl.handoffTask)
	})
}

// dirs are the working directories whose threads belong to the lane: its
// project's (a terminal session starts there) and its worktree's.
func (tl *threadLinks) dirs(sl store.Lane) []string {
	dirs := []string{tl.projects.dirOf(sl)}
	if wt := tl.wt.dirOf(sl); wt != "" && wt != dirs[0] {
		dirs = append(dirs, wt)
	}
	return dirs
}

// list is /threads.
func (tl *threadLinks) list(ctx context.Context, l *lane) string {
	sl, err := tl.st.Lane(ctx, l.key)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return storeErrorNotice
	}
	sl.SessionKey = l.key
	dirs := tl.dirs(sl)
	threads, err := tl.cx.ListThreads(ctx, codex.ThreadFilter{Cwds: dirs, Limit: threadsListMax})
	if err != nil {
		tl.log.Warn("threads.list_failed", zap.String("lane", l.key), zap.Error(err))
		return "Could not list Codex's threads: " + briefError(err)
	}
	if len(threads) == 0 {
		return "No Codex threads in " + strings.Join(dirs, " or ") + " yet."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Codex threads in %s, newest first (/attach ID to continue one here):", strings.Join(dirs, " or "))
	for _, th := range threads {
		fmt.Fprintf(&b, "\n• %s — %q, %s ago", th.ID, quoteStart(threadTitle(th)), roundAge(tl.now().Sub(th.UpdatedAt)))
		if th.ID == sl.ThreadID && sl.Binding != store.BindingLost {
			b.WriteString(" ← this conversation")
		}
	}
	return b.String()
}

// threadTitle is a thread's name, else its first words.
func threadTitle(th codex.ThreadSummary) string {
	if th.Name != "" {
		return th.Name
	}
	return th.Preview
}

func (tl *threadLinks) attachTask(ctx context.Context, l *lane, it item) {
	defer tl.inbox.set(ctx, it.inboundID, store.InboundDone)
	tl.out.notify(ctx, l.addr, it.msgID, tl.attach(ctx, l, it.text))
}

// attach is /attach ID: find the thread among the project's, check no
// other lane holds it or let go of it, resume it, then bind it. A thread
// codex cannot resume changes nothing.
func (tl *threadLinks) attach(ctx context.Context, l *lane, arg string) string {
	sl, err := tl.st.Lane(ctx, l.key)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "Send a first message here before attaching a thread."
		}
		return storeErrorNotice
	}
	id, why := tl.resolve(ctx, sl, strings.TrimSpace(arg))
	if id == "" {
		return why
	}
	if id == sl.ThreadID && sl.Binding != store.BindingLost {
		return "This conversation is already on thread " + id + "."
	}
	if claim, err := tl.st.ThreadClaim(ctx, id, l.key); err != nil {
		return storeErrorNotice
	} else if claim.Lane != "" {
		return claimedText(id, claim.Held)
	}
	l.opMu.Lock()
	defer l.opMu.Unlock()
	en, err := tl.cx.EnsureThread(ctx, id, tl.loader.config(sl))
	if err != nil {
		return "Could not resume thread " + id + ": " + briefError(err)
	}
	if en.Outcome == codex.OutcomeReplaced || en.Outcome == codex.OutcomeStarted {
		tl.threads.release(ctx, l.key, en.ThreadID, "attach refused")
		return "Could not resume thread " + id + " (" + en.Reason + "); this conversation stays on its thread."
	}
	if err := tl.st.AttachThread(ctx, l.key, sl.Generation, id); err != nil {
		tl.threads.release(ctx, l.key, id, "attach refused")
		if held := errors.Is(err, store.ErrThreadHeld); held || errors.Is(err, store.ErrThreadReleased) {
			return claimedText(id, held)
		}
		tl.log.Error("threads.attach_failed", zap.String("lane", l.key), zap.Error(err))
		return storeErrorNotice
	}
	old := l.loadedThread()
	tl.threads.markLive(ctx, l, id)
	if old != "" && old != id {
		tl.threads.release(ctx, l.key, old, "attach")
	}
	tl.log.Info("threads.attached", zap.String("lane", l.key), zap.String("thread", id), zap.String("previous", sl.ThreadID))
	text := "Attached thread " + id + "; the next message continues it here."
	if sl.ThreadID != "" {
		text += " The previous thread " + sl.ThreadID + " is kept: /attach it to come back."
	}
	return text
}

// claimedText refuses a thread another lane holds or let go of. The other
// lane is not named: its key says whose chat it is.
func claimedText(id string, held bool) string {
	if held {
		return "Thread " + id + " is held by another conversation of this gateway; it cannot be attached here."
	}
	return "Thread " + id + " was released by another conversation of this gateway (/reset, /new, a new session or a replaced thread); " +
		"its history stays that conversation's, so it cannot be attached here."
}

// resolve finds the thread arg names among the lane's directories'
// threads (what /threads lists, and older ones up to threadsMatchMax):
// the one whose id is arg or the only one starting with it. A thread of
// another directory is not one of them, whatever its id.
func (tl *threadLinks) resolve(ctx context.Context, sl store.Lane, arg string) (id, why string) {
	dirs := tl.dirs(sl)
	threads, err := tl.cx.ListThreads(ctx, codex.ThreadFilter{Cwds: dirs, Limit: threadsMatchMax})
	if err != nil {
		return "", "Could not list Codex's threads: " + briefError(err)
	}
	var matches []string
	for _, th := range threads {
		if th.ID == arg {
			return arg, ""
		}
		if strings.HasPrefix(th.ID, arg) {
			matches = append(matches, th.ID)
		}
	}
	switch len(matches) {
	case 1:
		return matches[0], ""
	case 0:
		return "", fmt.Sprintf("No thread listed for this conversation's project (%s) starts with %q; /threads lists those it can attach.",
			strings.Join(dirs, " or "), arg)
	}
	return "", fmt.Sprintf("%q is the start of %d threads (%s); give more of the id.", arg, len(matches), strings.Join(matches, ", "))
}

func (tl *threadLinks) handoffTask(ctx context.Context, l *lane, it item) {
	defer tl.inbox.set(ctx, it.inboundID, store.InboundDone)
	tl.out.notify(ctx, l.addr, it.msgID, tl.handoff(ctx, l))
}

// handoff is /handoff: the lane's thread is released from the app-server,
// so the terminal is its only writer, and the command to continue it
// there is printed.
func (tl *threadLinks) handoff(ctx context.Context, l *lane) string {
	sl, err := tl.st.Lane(ctx, l.key)
	if errors.Is(err, store.ErrNotFound) || (err == nil && (sl.ThreadID == "" || sl.Binding == store.BindingLost)) {
		return "This conversation has no Codex thread yet: nothing to hand off."
	}
	if err != nil {
		return storeErrorNotice
	}
	l.opMu.Lock()
	if loaded := l.loadedThread(); loaded != "" {
		tl.lanesUnlive(l)
		tl.threads.release(ctx, l.key, loaded, "handoff")
	}
	l.opMu.Unlock()
	cmd := "cd " + shellQuote(tl.loader.laneDir(sl)) + " && "
	if tl.home != "" {
		cmd += "CODEX_HOME=" + shellQuote(tl.home) + " "
	}
	cmd += "codex resume " + sl.ThreadID
	return "To continue this conversation in a terminal:\n\n```\n" + cmd + "\n```\n\n" +
		"Don't write here while the terminal session runs. When you are done there, send a message here: it resumes the thread with what the terminal added."
}

// lanesUnlive takes the lane out of the live count once its thread is
// released.
func (tl *threadLinks) lanesUnlive(l *lane) {
	l.setLive("", 0)
	tl.threads.lanes.unlive(l)
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
