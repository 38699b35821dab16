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
// the terminal added. Codex allows one writer per thread (the others are
// refused "already has an active writer"): /attach of a thread another
// client has open is refused with the ways out (quit it there, or /fork
// it), and /handoff says when the terminal would be refused too. The
// gateway lets go of a thread when it releases it (/handoff, /reset or
// /new, eviction of an idle lane) and when its app-server exits.

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
				tl.answer(ctx, c, tl.attach(ctx, c.Lane, c.Args))
			})
		}})
	h.Command(ext.Command{Name: "handoff", Menu: true,
		Description: "Continue this conversation in a terminal with codex resume",
		Run: func(ctx context.Context, c ext.Call) bool {
			return ext.BetweenTurns(ctx, h, c, func(ctx context.Context) {
				tl.answer(ctx, c, tl.handoff(ctx, c.Lane))
			})
		}})
	return nil
}

// reply is a command's answer and the commands it offers as buttons; the
// text names them too, for the platforms without buttons.
type reply struct {
	text    string
	buttons []chat.Button
}

// say is a reply without buttons.
func say(text string) reply { return reply{text: text} }

// answer sends r to the command's lane.
func (tl *Links) answer(ctx context.Context, c ext.Call, r reply) {
	if len(r.buttons) == 0 {
		tl.host.Notify(ctx, c.Lane.Address(), c.MsgID, r.text)
		return
	}
	tl.host.NotifyChoices(ctx, c.Lane.Address(), c.MsgID, r.text, r.buttons)
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
// codex cannot resume changes nothing; one another Codex client writes to
// is refused with the ways out.
func (tl *Links) attach(ctx context.Context, l ext.Lane, arg string) reply {
	key := l.Key()
	sl, err := tl.st.Lane(ctx, key)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return say("Send a first message here before attaching a thread.")
		}
		return say(ext.StoreErrorNotice)
	}
	id, why := tl.resolve(ctx, sl, strings.TrimSpace(arg))
	if id == "" {
		return say(why)
	}
	if id == sl.ThreadID && sl.Binding != store.BindingLost {
		return say("This conversation is already on thread " + id + ".")
	}
	if claim, err := tl.st.ThreadClaim(ctx, id, key); err != nil {
		return say(ext.StoreErrorNotice)
	} else if claim.Lane != "" {
		return say(claimedText(id, claim.Held))
	}
	var bindErr error
	en, err := l.AdoptThread(ctx, id, tl.host.ThreadConfig(sl), func(ctx context.Context) error {
		bindErr = tl.st.AttachThread(ctx, key, sl.Generation, id)
		return bindErr
	})
	switch {
	case bindErr != nil:
		if held := errors.Is(bindErr, store.ErrThreadHeld); held || errors.Is(bindErr, store.ErrThreadReleased) {
			return say(claimedText(id, held))
		}
		tl.log.Error("threads.attach_failed", zap.String("lane", key), zap.Error(bindErr))
		return say(ext.StoreErrorNotice)
	case errors.Is(err, codex.ErrStaleWriter):
		tl.log.Info("threads.attach_other_writer", zap.String("lane", key), zap.String("thread", id))
		return writerElsewhere(id)
	case err != nil:
		return say("Could not resume thread " + id + ": " + ext.BriefError(err))
	case en.Outcome == codex.OutcomeReplaced || en.Outcome == codex.OutcomeStarted:
		return say("Could not resume thread " + id + " (" + en.Reason + "); this conversation stays on its thread.")
	}
	tl.log.Info("threads.attached", zap.String("lane", key), zap.String("thread", id), zap.String("previous", sl.ThreadID))
	text := "Attached thread " + id + "; the next message continues it here."
	if sl.ThreadID != "" {
		text += " The previous thread " + sl.ThreadID + " is kept: /attach it to come back."
	}
	return say(text)
}

// otherClients are the Codex clients that may hold a thread's writer.
// codex refuses a second writer without naming the first
// ("thread <id> already has an active writer").
const otherClients = "another Codex client (a terminal's `codex resume`, the Codex app, an IDE or another app-server on this CODEX_HOME)"

// writerElsewhere refuses /attach of a thread another Codex client
// writes to, and offers the ways out: close it there and attach again,
// or fork it beside this conversation, which codex allows meanwhile.
func writerElsewhere(id string) reply {
	return reply{
		text: "Thread " + id + " is open in " + otherClients + ", and Codex lets one client at a time write to a thread; " +
			"this conversation stays on its thread.\n" +
			"• To continue it here: quit it there (end `codex resume`, or close the thread in the app), then /attach " + id + " again.\n" +
			"• To go on from it now, leaving it open there: /fork " + id + " starts a copy of it in a new conversation beside this one.",
		buttons: []chat.Button{ext.CommandLineButton("fork "+id, "Fork it")},
	}
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

// noThread answers /handoff in a lane without a thread.
const noThread = "This conversation has no Codex thread yet: nothing to hand off."

// handoff is /handoff: the lane's thread is released from the app-server,
// so the terminal can be its one writer, and the command to continue it
// there is printed. Codex allows one writer per thread: the thread is
// loaded first, which also finds out whether another client writes to it
// already (the terminal's resume would be refused as the lane's is), and
// a release that failed says how to make the gateway let go.
func (tl *Links) handoff(ctx context.Context, l ext.Lane) reply {
	sl, err := tl.st.Lane(ctx, l.Key())
	if errors.Is(err, store.ErrNotFound) || (err == nil && (sl.ThreadID == "" || sl.Binding == store.BindingLost)) {
		return say(noThread)
	}
	if err != nil {
		return say(ext.StoreErrorNotice)
	}
	cmd := tl.resumeCommand(sl)
	switch _, err := l.LoadThread(ctx); {
	case errors.Is(err, ext.ErrNoThread):
		return say(noThread) // codex had lost it: a new one is bound, empty
	case errors.Is(err, codex.ErrStaleWriter):
		tl.log.Info("threads.handoff_other_writer", zap.String("lane", l.Key()), zap.String("thread", sl.ThreadID))
		return reply{
			text: "Thread " + sl.ThreadID + " is already open in " + otherClients + ", and Codex lets one client at a time write to a thread: " +
				"a terminal's `codex resume` is refused while it is, as this conversation is. Quit it there first, then run:\n\n```\n" + cmd + "\n```\n\n" +
				"Or /fork to go on from it in a new conversation, leaving it open there.",
			buttons: []chat.Button{ext.CommandButton("fork", "Fork")},
		}
	case err != nil:
		// Codex could not be asked: the release below still lets go of a
		// thread the app-server has, and the terminal says if it cannot.
		tl.log.Warn("threads.handoff_load_failed", zap.String("lane", l.Key()), zap.Error(err))
	}
	if err := l.ReleaseThread(ctx, "handoff"); err != nil {
		return say("Could not make the gateway let go of thread " + sl.ThreadID + " (" + ext.BriefError(err) + "): its app-server may still be " +
			"the thread's writer, and Codex lets one client at a time write to a thread, so `codex resume` would be refused. " +
			"Stop the gateway's writer: restart gatewayd (its app-server exits and lets go of every thread), then run:\n\n```\n" + cmd + "\n```")
	}
	return say("The gateway has let go of this conversation's thread, so a terminal can write to it:\n\n```\n" + cmd + "\n```\n\n" +
		"Codex lets one client at a time write to a thread: while `codex resume` runs, a message here is refused and nothing else happens. " +
		"When you are done there, quit codex, then send a message here: it resumes the thread with what the terminal added.")
}

// resumeCommand is the shell command that continues the lane's thread in
// a terminal, where the lane works.
func (tl *Links) resumeCommand(sl store.Lane) string {
	cmd := "cd " + shellQuote(tl.host.WorkDir(sl)) + " && "
	if tl.home != "" {
		cmd += "CODEX_HOME=" + shellQuote(tl.home) + " "
	}
	return cmd + "codex resume " + sl.ThreadID
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+=:,@") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
