package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// /fork [title]: the lane's thread is forked (thread/fork) into
// a new lane in a new place beside it — a Discord thread in the channel, a
// Telegram forum topic, a new API lane — whose worktree starts from the
// parent's files as they are now, on a branch of its own. The fork is
// bound pending like any new thread, and confirmed by its first completed
// turn. The parent lane and its worktree are left as they were.

type forks struct {
	st interface {
		Lane(ctx context.Context, sessionKey string) (store.Lane, error)
		EnsureLane(ctx context.Context, k store.LaneKey) (store.Lane, error)
		SetProject(ctx context.Context, sessionKey, name string) error
		SetMeta(ctx context.Context, sessionKey string, meta map[string]string) error
		BindThread(ctx context.Context, sessionKey string, gen int64, threadID string) error
	}
	cx interface {
		ForkThread(ctx context.Context, parentID string, cfg codex.ForkConfig) (string, error)
		Release(ctx context.Context, threadID string) error
	}
	loader    *threadLoader
	wt        *worktrees
	sched     *scheduler
	out       *deliverer
	inbox     inbox
	platforms map[string]Platform
	log       *zap.Logger
}

// metaTitle is the lane meta key of its title (title.go).
const metaTitle = "title"

func (f *forks) register(h *host) {
	h.command("fork", func(ctx context.Context, c commandCall) bool {
		return betweenTurns(ctx, c, f.sched, f.out, f.run)
	})
}

func (f *forks) run(ctx context.Context, l *lane, it item) {
	defer f.inbox.set(ctx, it.inboundID, store.InboundDone)
	text, made := f.fork(ctx, l, strings.TrimSpace(it.text))
	row := noticeFor(l.addr, it.msgID, text)
	if made != nil {
		row.ForkLane, row.ThreadID = made.Lane, made.ThreadID
	}
	if _, err := f.out.st.Enqueue(ctx, row); err != nil {
		f.log.Error("outbox.enqueue_failed", zap.String("lane", l.key), zap.Error(err))
		f.out.sendDirect(ctx, l.addr, it.msgID, "", text)
		return
	}
	f.out.poke()
}

// fork makes the fork and returns what to tell the parent lane, and the
// fork made (nil when none was).
func (f *forks) fork(ctx context.Context, l *lane, title string) (string, *ForkInfo) {
	plat, ok := f.platforms[l.addr.Platform]
	if !ok {
		return "Cannot fork here: this platform is not running.", nil
	}
	thread, err := f.loader.load(ctx, l)
	if errors.Is(err, ErrNoThread) {
		return "Nothing to fork: this conversation has no Codex thread yet.", nil
	}
	if err != nil {
		f.log.Warn("fork.load_failed", zap.String("lane", l.key), zap.Error(err))
		return "Could not fork: the Codex thread could not be opened (" + briefError(err) + ").", nil
	}
	parent, err := f.st.Lane(ctx, l.key)
	if err != nil {
		return storeErrorNotice, nil
	}
	if title == "" {
		title = forkTitle(parent)
	}
	addr, err := plat.OpenPlace(ctx, l.addr, title)
	if errors.Is(err, ErrNoPlace) {
		return "Cannot fork here: " + err.Error(), nil
	}
	if err != nil {
		f.log.Warn("fork.place_failed", zap.String("lane", l.key), zap.Error(err))
		return "Could not open a conversation for the fork: " + briefError(err), nil
	}
	child, files, err := f.childLane(ctx, l, parent, addr, title)
	if err != nil {
		f.log.Error("fork.lane_failed", zap.String("lane", l.key), zap.String("child", addr.SessionKey()), zap.Error(err))
		return storeErrorNotice, nil
	}
	forked, err := f.cx.ForkThread(ctx, thread, codex.ForkConfig{Thread: f.loader.config(child)})
	if err != nil {
		f.log.Warn("fork.thread_failed", zap.String("lane", l.key), zap.Error(err))
		f.out.notify(ctx, addr, "", "The fork of "+title+" failed: Codex did not fork its thread. This conversation starts fresh.")
		return "Could not fork: Codex did not fork the thread (" + briefError(err) + ").", nil
	}
	// Bound pending, released: the fork's first turn resumes it like any
	// stored thread, in the fork's worktree.
	if err := f.st.BindThread(ctx, child.SessionKey, child.Generation, forked); err != nil {
		f.log.Error("fork.bind_failed", zap.String("child", child.SessionKey), zap.Error(err))
		_ = f.cx.Release(context.WithoutCancel(ctx), forked)
		return storeErrorNotice, nil
	}
	if err := f.cx.Release(context.WithoutCancel(ctx), forked); err != nil {
		f.log.Warn("fork.release_failed", zap.String("thread", forked), zap.Error(err))
	}
	f.log.Info("fork.made", zap.String("lane", l.key), zap.String("child", child.SessionKey),
		zap.String("thread", thread), zap.String("fork", forked))
	f.out.notify(ctx, addr, "", fmt.Sprintf("Forked from %q: this conversation goes on from there on its own Codex thread %s. %s",
		forkTitle(parent), forked, files))
	return fmt.Sprintf("Forked into %q: thread %s. %s", title, forked, files),
		&ForkInfo{Lane: child.SessionKey, ThreadID: forked}
}

// childLane records the fork's lane with the parent's project and title,
// gives it its worktree and says what became of the files.
func (f *forks) childLane(ctx context.Context, l *lane, parent store.Lane, addr Address, title string) (store.Lane, string, error) {
	child, err := f.st.EnsureLane(ctx, laneKey(addr))
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
	tree, why, ok := f.wt.fork(ctx, l, parent, child.SessionKey)
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
	return quoteStart(name) + " fork"
}
