// Package fork is /fork [title]: the lane's thread forked (thread/fork)
// into a new lane in a new place beside it; /fork ID [title] forks a
// thread /threads lists for the lane's project instead (parent.go).
package fork

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

// The new place is a Discord thread in the channel, a Telegram forum
// topic, a new API lane; its worktree starts from the parent's files as
// they are now, on a branch of its own. The fork is bound pending like any
// new thread, and confirmed by its first completed turn. The parent lane
// and its worktree are left as they were.

// metaTitle is the lane meta key of its title, as the store keeps it
// (store.Inbound.LaneTitle).
const metaTitle = "title"

// Store is the part of the store /fork uses.
type Store interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	EnsureLane(ctx context.Context, k store.LaneKey) (store.Lane, error)
	SetProject(ctx context.Context, sessionKey, name string) error
	SetMeta(ctx context.Context, sessionKey string, meta map[string]string) error
	BindThread(ctx context.Context, sessionKey string, gen int64, threadID string) error
	ThreadClaim(ctx context.Context, threadID, exceptKey string) (store.ThreadClaim, error)
}

var _ Store = (*store.Store)(nil)

// Runtime is what /fork uses of codex.
type Runtime interface {
	ForkThread(ctx context.Context, parentID string, cfg codex.ForkConfig) (string, error)
	Release(ctx context.Context, threadID string) error
	ListThreads(ctx context.Context, f codex.ThreadFilter) ([]codex.ThreadSummary, error)
}

var _ Runtime = (*codex.Client)(nil)

// Forks is the /fork command.
type Forks struct {
	st   Store
	cx   Runtime
	host ext.Host
	log  *zap.Logger
}

// New is /fork over st and cx.
func New(st Store, cx Runtime) *Forks { return &Forks{st: st, cx: cx} }

// Name is the feature's name.
func (f *Forks) Name() string { return "fork" }

// Register adds /fork.
func (f *Forks) Register(h ext.Host) error {
	f.host, f.log = h, h.Logger()
	// Args stay "[title]" for the platforms' menus (a Discord option is
	// made of it); /fork ID [title] is what /attach offers, in its text.
	h.Command(ext.Command{Name: "fork", Args: "[title]", Menu: true,
		Description: "Fork this conversation into a new thread or topic with its own worktree",
		Run: func(ctx context.Context, c ext.Call) bool {
			return ext.BetweenTurns(ctx, h, c, func(ctx context.Context) {
				text, made := f.fork(ctx, c.Lane, strings.TrimSpace(c.Args))
				if made == nil {
					h.Notify(ctx, c.Lane.Address(), c.MsgID, text)
					return
				}
				h.NotifyFork(ctx, c.Lane.Address(), c.MsgID, text, *made)
			})
		}})
	return nil
}

// fork makes the fork of the lane's thread, or of the thread args name
// first, and returns what to tell the parent lane, and the fork made (nil
// when none was).
func (f *Forks) fork(ctx context.Context, l ext.Lane, args string) (string, *ext.Fork) {
	near := l.Address()
	if !f.host.CanOpenPlace(near.Platform) {
		return "Cannot fork here: this platform cannot open another conversation.", nil
	}
	named, title := splitArgs(args)
	thread, why := f.parent(ctx, l, named)
	if thread == "" {
		return why, nil
	}
	parent, err := f.st.Lane(ctx, l.Key())
	if err != nil {
		return ext.StoreErrorNotice, nil
	}
	if title == "" {
		title = forkTitle(parent)
	}
	addr, err := f.host.OpenPlace(ctx, near, title)
	if errors.Is(err, chat.ErrNoPlace) {
		return "Cannot fork here: " + err.Error(), nil
	}
	if err != nil {
		f.log.Warn("fork.place_failed", zap.String("lane", l.Key()), zap.Error(err))
		return "Could not open a conversation for the fork: " + ext.BriefError(err), nil
	}
	child, files, err := f.childLane(ctx, l, parent, addr, title)
	if err != nil {
		f.log.Error("fork.lane_failed", zap.String("lane", l.Key()), zap.String("child", addr.SessionKey()), zap.Error(err))
		return ext.StoreErrorNotice, nil
	}
	forked, err := f.cx.ForkThread(ctx, thread, codex.ForkConfig{Thread: f.host.ThreadConfig(child)})
	if err != nil {
		f.log.Warn("fork.thread_failed", zap.String("lane", l.Key()), zap.Error(err))
		f.host.Notify(ctx, addr, "", "The fork of "+title+" failed: Codex did not fork its thread. This conversation starts fresh.")
		return "Could not fork: Codex did not fork the thread (" + ext.BriefError(err) + ").", nil
	}
	// Bound pending, released: the fork's first turn resumes it like any
	// stored thread, in the fork's worktree.
	if err := f.st.BindThread(ctx, child.SessionKey, child.Generation, forked); err != nil {
		f.log.Error("fork.bind_failed", zap.String("child", child.SessionKey), zap.Error(err))
		_ = f.cx.Release(context.WithoutCancel(ctx), forked)
		return ext.StoreErrorNotice, nil
	}
	if err := f.cx.Release(context.WithoutCancel(ctx), forked); err != nil {
		f.log.Warn("fork.release_failed", zap.String("thread", forked), zap.Error(err))
	}
	f.log.Info("fork.made", zap.String("lane", l.Key()), zap.String("child", child.SessionKey),
		zap.String("thread", thread), zap.String("fork", forked))
	f.host.Notify(ctx, addr, "", fmt.Sprintf("Forked from %q: this conversation goes on from there on its own Codex thread %s. %s",
		forkTitle(parent), forked, files))
	return fmt.Sprintf("Forked into %q: thread %s. %s", title, forked, files),
		&ext.Fork{Lane: child.SessionKey, ThreadID: forked}
}

// childLane records the fork's lane with the parent's project and title,
// gives it its worktree and says what became of the files.
func (f *Forks) childLane(ctx context.Context, l ext.Lane, parent store.Lane, addr chat.Address, title string) (store.Lane, string, error) {
	child, err := f.st.EnsureLane(ctx, store.LaneKey{SessionKey: addr.SessionKey(), Platform: addr.Platform,
		Kind: string(addr.Kind), ChatID: addr.ChatID, TopicID: addr.TopicID, UserID: addr.UserID})
	if err != nil {
		return store.Lane{}, "", err
	}
	if err := f.st.SetMeta(ctx, child.SessionKey, map[string]string{metaTitle: title}); err != nil {
		return store.Lane{}, "", err
	}
	if parent.Project != "" {
		if err := f.st.SetProject(ctx, child.SessionKey, parent.Project); err != nil {
			return store.Lane{}, "", err
		}
	}
	child, err = f.st.Lane(ctx, child.SessionKey)
	if err != nil {
		return store.Lane{}, "", err
	}
	tree, why, ok := l.ForkWorktree(ctx, parent, child.SessionKey)
	if !ok {
		return child, "Files: not copied (" + strings.TrimSuffix(why, ".") + ").", nil
	}
	return child, fmt.Sprintf("Files: its own worktree %s on branch %s, started from the parent's files as they were.", tree.Dir, tree.Branch()), nil
}

// forkTitle is the parent's title + " fork".
func forkTitle(parent store.Lane) string {
	name := parent.Meta[metaTitle]
	if name == "" {
		name = "conversation"
	}
	return ext.QuoteStart(name, 60) + " fork"
}
