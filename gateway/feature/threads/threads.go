// Package threads is /threads, /attach ID and /handoff: the lane and the
// Codex CLI or an IDE on the same CODEX_HOME share threads.
package threads

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// /threads lists the threads of the lane's project (its checkout, where a
// terminal session starts, and the lane's worktree), whoever started them;
// /attach binds the lane to one of those and resumes it, pending like any
// new binding until a turn completes on it (every lane's agent may be
// hostile, so /attach reaches no further than /threads shows): refused for
// a thread not listed for the lane's project, one another lane holds, and
// one another lane let go of (/reset, /new, rotation, a replaced thread:
// its history is that conversation's); the database checks the last two
// again in the same write. /handoff releases the lane's thread from the
// app-server and prints the command that continues it in a terminal. The
// lane's binding stays, so its next message resumes the thread with what
// the terminal added.

const (
	listMax  = 20
	matchMax = 200 // threads /attach looks through for a prefix
)

// Store is the part of the store these commands use.
type Store interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	ThreadClaim(ctx context.Context, threadID, exceptKey string) (store.ThreadClaim, error)
	AttachThread(ctx context.Context, sessionKey string, gen int64, threadID string) error
}

var _ Store = (*store.Store)(nil)

// Runtime is what these commands use of codex.
type Runtime interface {
	ListThreads(ctx context.Context, f codex.ThreadFilter) ([]codex.ThreadSummary, error)
}

var _ Runtime = (*codex.Client)(nil)

// Links are /threads, /attach and /handoff.
type Links struct {
	st   Store
	cx   Runtime
	home string // CODEX_HOME, for the terminal's command ("": not named)
	host ext.Host
	log  *zap.Logger
}

// New is the commands over st and cx; home is the app-server's CODEX_HOME,
// named in /handoff's command ("": not named).
func New(st Store, cx Runtime, home string) *Links { return &Links{st: st, cx: cx, home: home} }

// Name is the feature's name.
func (tl *Links) Name() string { return "threads" }

// Register adds /threads, /attach and /handoff.
func (tl *Links) Register(h ext.Host) error {
	tl.host, tl.log = h, h.Logger()
	h.Command(ext.Command{Name: "threads", Menu: true,
		Description: "List the Codex threads of this conversation's project, the CLI's and IDE's too",
		Run: func(ctx context.Context, c ext.Call) bool {
			h.Notify(ctx, c.Lane.Address(), c.MsgID, tl.list(ctx, c.Lane))
			return true
		}})
	h.Command(ext.Command{Name: "attach", Args: "ID", Description: "Continue a Codex thread from /threads here",
		Run: func(ctx context.Context, c ext.Call) bool {
			if c.Args == "" {
				h.Notify(ctx, c.Lane.Address(), c.MsgID, "Usage: /attach ID — a thread id from /threads, or the start of one.")
				return true
			}
			return ext.BetweenTurns(ctx, h, c, func(ctx context.Context) {
				h.Notify(ctx, c.Lane.Address(), c.MsgID, tl.attach(ctx, c.Lane, c.Args))
			})
		}})
	h.Command(ext.Command{Name: "handoff", Menu: true,
		Description: "Continue this conversation in a terminal with codex resume",
		Run: func(ctx context.Context, c ext.Call) bool {
			return ext.BetweenTurns(ctx, h, c, func(ctx context.Context) {
				h.Notify(ctx, c.Lane.Address(), c.MsgID, tl.handoff(ctx, c.Lane))
			})
		}})
	return nil
}

// dirs are the working directories whose threads belong to the lane: its
// project's (a terminal session starts there) and its worktree's.
func (tl *Links) dirs(sl store.Lane) []string {
	dirs := []string{tl.host.ProjectDir(sl)}
	if wt := tl.host.WorkDir(sl); wt != "" && wt != dirs[0] {
		dirs = append(dirs, wt)
	}
	return dirs
}

// list is /threads.
func (tl *Links) list(ctx context.Context, l ext.Lane) string {
	sl, err := tl.st.Lane(ctx, l.Key())
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return ext.StoreErrorNotice
	}
	sl.SessionKey = l.Key()
	dirs := tl.dirs(sl)
	threads, err := tl.cx.ListThreads(ctx, codex.ThreadFilter{Cwds: dirs, Limit: listMax})
	if err != nil {
		tl.log.Warn("threads.list_failed", zap.String("lane", l.Key()), zap.Error(err))
		return "Could not list Codex's threads: " + ext.BriefError(err)
	}
	if len(threads) == 0 {
		return "No Codex threads in " + strings.Join(dirs, " or ") + " yet."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Codex threads in %s, newest first (/attach ID to continue one here):", strings.Join(dirs, " or "))
	for _, th := range threads {
		fmt.Fprintf(&b, "\n• %s — %q, %s ago", th.ID, ext.QuoteStart(threadTitle(th), 60), chat.Age(tl.host.Now().Sub(th.UpdatedAt)))
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

// attach is /attach ID: find the thread among the project's, check no
// other lane holds it or let go of it, resume it, then bind it. A thread
// codex cannot resume changes nothing.
func (tl *Links) attach(ctx context.Context, l ext.Lane, arg string) string {
	key := l.Key()
	sl, err := tl.st.Lane(ctx, key)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return "Send a first message here before attaching a thread."
		}
		return ext.StoreErrorNotice
	}
	id, why := tl.resolve(ctx, sl, strings.TrimSpace(arg))
	if id == "" {
		return why
	}
	if id == sl.ThreadID && sl.Binding != store.BindingLost {
		return "This conversation is already on thread " + id + "."
	}
	if claim, err := tl.st.ThreadClaim(ctx, id, key); err != nil {
		return ext.StoreErrorNotice
	} else if claim.Lane != "" {
		return claimedText(id, claim.Held)
	}
	var bindErr error
	en, err := l.AdoptThread(ctx, id, tl.host.ThreadConfig(sl), func(ctx context.Context) error {
		bindErr = tl.st.AttachThread(ctx, key, sl.Generation, id)
		return bindErr
	})
	switch {
	case bindErr != nil:
		if held := errors.Is(bindErr, store.ErrThreadHeld); held || errors.Is(bindErr, store.ErrThreadReleased) {
			return claimedText(id, held)
		}
		tl.log.Error("threads.attach_failed", zap.String("lane", key), zap.Error(bindErr))
		return ext.StoreErrorNotice
	case err != nil:
		return "Could not resume thread " + id + ": " + ext.BriefError(err)
	case en.Outcome == codex.OutcomeReplaced || en.Outcome == codex.OutcomeStarted:
		return "Could not resume thread " + id + " (" + en.Reason + "); this conversation stays on its thread."
	}
	tl.log.Info("threads.attached", zap.String("lane", key), zap.String("thread", id), zap.String("previous", sl.ThreadID))
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
// threads (what /threads lists, and older ones up to matchMax): the one
// whose id is arg or the only one starting with it. A thread of another
// directory is not one of them, whatever its id.
func (tl *Links) resolve(ctx context.Context, sl store.Lane, arg string) (id, why string) {
	dirs := tl.dirs(sl)
	threads, err := tl.cx.ListThreads(ctx, codex.ThreadFilter{Cwds: dirs, Limit: matchMax})
	if err != nil {
		return "", "Could not list Codex's threads: " + ext.BriefError(err)
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

// handoff is /handoff: the lane's thread is released from the app-server,
// so the terminal is its only writer, and the command to continue it
// there is printed.
func (tl *Links) handoff(ctx context.Context, l ext.Lane) string {
	sl, err := tl.st.Lane(ctx, l.Key())
	if errors.Is(err, store.ErrNotFound) || (err == nil && (sl.ThreadID == "" || sl.Binding == store.BindingLost)) {
		return "This conversation has no Codex thread yet: nothing to hand off."
	}
	if err != nil {
		return ext.StoreErrorNotice
	}
	l.ReleaseThread(ctx, "handoff")
	cmd := "cd " + shellQuote(tl.host.WorkDir(sl)) + " && "
	if tl.home != "" {
		cmd += "CODEX_HOME=" + shellQuote(tl.home) + " "
	}
	cmd += "codex resume " + sl.ThreadID
	return "To continue this conversation in a terminal:\n\n```\n" + cmd + "\n```\n\n" +
		"Don't write here while the terminal session runs. When you are done there, send a message here: it resumes the thread with what the terminal added."
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
