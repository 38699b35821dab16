package fork

import (
	"context"
	"errors"
	"strings"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// A fork's parent is the lane's own thread, or a thread named by its id
// (/fork ID [title]): what /attach offers for a thread another Codex
// client writes to, since codex forks a thread whoever writes to it. A
// named thread must be one /attach could take: listed for the lane's
// project and neither held nor let go of by another lane (every lane's
// agent may be hostile, and a fork carries the thread's history).

// listMax bounds the threads looked through for a named parent.
const listMax = 200

// splitArgs splits /fork's arguments into a thread id, when the first
// word is one, and the title.
func splitArgs(args string) (id, title string) {
	first, rest, _ := strings.Cut(args, " ")
	if isThreadID(first) {
		return first, strings.TrimSpace(rest)
	}
	return "", args
}

// isThreadID reports whether s is shaped like a codex thread id (a UUID).
func isThreadID(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i, r := range s {
		switch i {
		case 8, 13, 18, 23:
			if r != '-' {
				return false
			}
		default:
			if !strings.ContainsRune("0123456789abcdefABCDEF", r) {
				return false
			}
		}
	}
	return true
}

// parent is the thread to fork, or why there is none, in words for the
// lane.
func (f *Forks) parent(ctx context.Context, l ext.Lane, named string) (thread, why string) {
	if named != "" {
		return f.namedParent(ctx, l, named)
	}
	thread, err := l.LoadThread(ctx)
	switch {
	case errors.Is(err, ext.ErrNoThread):
		return "", "Nothing to fork: this conversation has no Codex thread yet."
	case errors.Is(err, codex.ErrStaleWriter):
		// Another client writes to it (the terminal after /handoff):
		// codex forks it from its rollout all the same.
		sl, serr := f.st.Lane(ctx, l.Key())
		if serr != nil {
			return "", ext.StoreErrorNotice
		}
		return sl.ThreadID, ""
	case err != nil:
		f.log.Warn("fork.load_failed", zap.String("lane", l.Key()), zap.Error(err))
		return "", "Could not fork: the Codex thread could not be opened (" + ext.BriefError(err) + ")."
	}
	return thread, ""
}

// namedParent checks that the thread id names may be forked here.
func (f *Forks) namedParent(ctx context.Context, l ext.Lane, id string) (thread, why string) {
	sl, err := f.st.Lane(ctx, l.Key())
	if err != nil {
		return "", ext.StoreErrorNotice
	}
	sl.SessionKey = l.Key()
	dirs := []string{f.host.ProjectDir(sl)}
	if wt := f.host.WorkDir(sl); wt != "" && wt != dirs[0] {
		dirs = append(dirs, wt)
	}
	threads, err := f.cx.ListThreads(ctx, codex.ThreadFilter{Cwds: dirs, Limit: listMax})
	if err != nil {
		return "", "Could not list Codex's threads: " + ext.BriefError(err)
	}
	listed := false
	for _, th := range threads {
		listed = listed || strings.EqualFold(th.ID, id)
	}
	if !listed {
		return "", "No thread " + id + " is listed for this conversation's project (" + strings.Join(dirs, " or ") + "); /threads lists those it can fork."
	}
	claim, err := f.st.ThreadClaim(ctx, id, l.Key())
	if err != nil {
		return "", ext.StoreErrorNotice
	}
	if claim.Lane != "" {
		return "", "Thread " + id + " is another conversation's of this gateway; it cannot be forked here."
	}
	return id, ""
}
