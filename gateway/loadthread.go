package gateway

import (
	"context"
	"errors"

	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// ErrNoThread is returned when a lane has no Codex thread to act on: none
// was started yet, or its binding was lost (the next turn replaces it).
var ErrNoThread = ext.ErrNoThread

// threadLoader loads a lane's bound thread outside a turn, for the
// commands that act on the thread itself (/compact, /undo, /review,
// /fork, /btw), exactly as a turn would load it: resumed with the lane's
// config if it is not loaded, marked live in the thread cache.
type threadLoader struct {
	st interface {
		Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	}
	cx interface {
		EnsureThread(ctx context.Context, storedID string, cfg codex.ThreadConfig) (codex.Ensured, error)
	}
	threads *threadCache
	turns   *turnRunner // binds a thread the load had to replace
	host    *host       // the thread config the modules make
	obs     Observer
	thread  codex.ThreadConfig // the base config of every lane's thread
	laneDir func(sl store.Lane) string
}

// load ensures the lane's bound thread is loaded. A lane without a usable
// thread is ErrNoThread; a stored thread codex refuses is replaced exactly
// as a turn would (bound, the lane told once), and is then ErrNoThread too:
// the new thread has nothing in it to act on.
func (ld *threadLoader) load(ctx context.Context, l *lane) (string, error) {
	sl, err := ld.st.Lane(ctx, l.key)
	if errors.Is(err, store.ErrNotFound) {
		return "", ErrNoThread
	}
	if err != nil {
		return "", err
	}
	if sl.ThreadID == "" || sl.Binding == store.BindingLost {
		return "", ErrNoThread
	}
	l.opMu.Lock()
	defer l.opMu.Unlock()
	ld.threads.releaseStale(ctx, l)
	en, err := ld.cx.EnsureThread(ctx, sl.ThreadID, ld.config(sl))
	if err != nil {
		return "", err
	}
	ld.obs.Resume(en.Outcome.String())
	if cur := l.current(); cur != nil {
		cur.setThread(en.ThreadID)
	}
	ld.threads.markLive(ctx, l, en.ThreadID)
	if en.Outcome == codex.OutcomeReplaced || en.Outcome == codex.OutcomeStarted {
		if err := ld.turns.bind(ctx, &turn{l: l, sl: sl}, en); err != nil {
			return "", err
		}
		return "", ErrNoThread
	}
	return en.ThreadID, nil
}

// config is the thread config of the stored lane as its turns make it:
// its working directory and what the modules add (confinement, git).
func (ld *threadLoader) config(sl store.Lane) codex.ThreadConfig {
	return ld.host.threadConfig(sl, ld.laneDir(sl), ld.thread)
}
