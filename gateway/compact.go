package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// Compaction is driven by the usage codex reports for the thread (its last
// request's tokens against the model's context window), never by an estimate
// of our transcript. Above Config.CompactAt the thread is compacted natively
// before the next turn, and the attempt starts a cooldown of
// CompactCooldownTurns turns, so a compaction that shrinks nothing (or
// fails) cannot run again on every turn. A failed compaction changes
// nothing else: the live thread stays loaded and bound, the turn runs, and
// the transcript is never touched.

// Lane metadata keys recording the last compaction (shown by /status).
const (
	metaCompactAt     = "compaction.last_at"
	metaCompactBefore = "compaction.tokens_before"
	metaCompactAfter  = "compaction.tokens_after"
)

// ErrNothingToCompact is returned when a lane has no thread to compact.
var ErrNothingToCompact = ErrNoThread

// compaction is /compact and the automatic compaction above lanes.compact_at.
type compaction struct {
	st       compactionStore
	cx       compactionRuntime
	sched    *scheduler
	loader   *threadLoader // /compact loads the lane's thread
	out      *deliverer
	inbox    inbox
	log      *zap.Logger
	obs      Observer
	now      func() time.Time
	at       float64 // lanes.compact_at; 0: no automatic compaction
	cooldown int     // turns between automatic attempts
}

type compactionStore interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	RecordCompaction(ctx context.Context, sessionKey, threadID string, before, after int64) error
	SetMeta(ctx context.Context, sessionKey string, meta map[string]string) error
}

type compactionRuntime interface {
	Usage(threadID string) (codex.Usage, bool)
	Compact(ctx context.Context, threadID string) (before, after codex.Usage, err error)
}

var (
	_ compactionStore   = (*store.Store)(nil)
	_ compactionRuntime = (*codex.Client)(nil)
)

// auto compacts the turn's thread first when codex reports its
// context above the threshold and the cooldown allows it.
func (c *compaction) auto(ctx context.Context, t *turn) {
	if c.at <= 0 || t.thread == "" {
		return
	}
	l := t.l
	if l.holdCompaction() {
		return
	}
	u, ok := c.cx.Usage(t.thread)
	if !ok || u.ContextWindow <= 0 || float64(u.LastTotalTokens) < c.at*float64(u.ContextWindow) {
		return
	}
	c.log.Info("thread.compact_auto", zap.String("lane", l.key), zap.String("thread", t.thread),
		zap.Int64("tokens", u.LastTotalTokens), zap.Int64("window", u.ContextWindow))
	t.cur.setCompacting(true)
	before, after, err := c.run(ctx, l, t.thread)
	t.cur.setCompacting(false)
	if err != nil {
		c.out.Notify(ctx, l.addr, "", "Could not compact this conversation's context ("+briefError(err)+
			"); continuing in the same Codex thread.")
		return
	}
	c.out.Notify(ctx, l.addr, "", fmt.Sprintf("Compacted this conversation's context before answering: %d → %d tokens.", before, after))
}

// runCompaction runs native compaction on a loaded thread, records it and
// starts the cooldown. It never releases, retires or replaces the thread.
func (c *compaction) run(ctx context.Context, l *lane, thread string) (before, after int64, err error) {
	defer l.startCompactionCooldown(c.cooldown)
	b, a, err := c.cx.Compact(ctx, thread)
	if err != nil {
		c.log.Warn("thread.compact_failed", zap.String("lane", l.key), zap.String("thread", thread), zap.Error(err))
		return 0, 0, err
	}
	before, after = b.LastTotalTokens, a.LastTotalTokens
	if before > 0 && after >= before {
		c.log.Warn("thread.compact_shrank_nothing", zap.String("lane", l.key), zap.Int64("before", before), zap.Int64("after", after))
	}
	if err := c.st.RecordCompaction(ctx, l.key, thread, before, after); err != nil {
		c.log.Error("thread.compaction_record_failed", zap.String("lane", l.key), zap.Error(err))
	}
	meta := map[string]string{metaCompactAt: c.now().UTC().Format(time.RFC3339),
		metaCompactBefore: strconv.FormatInt(before, 10), metaCompactAfter: strconv.FormatInt(after, 10)}
	if err := c.st.SetMeta(ctx, l.key, meta); err != nil {
		c.log.Error("thread.compaction_meta_failed", zap.String("lane", l.key), zap.Error(err))
	}
	c.log.Info("thread.compacted", zap.String("lane", l.key), zap.String("thread", thread),
		zap.Int64("before", before), zap.Int64("after", after))
	return before, after, nil
}

// compact is /compact: load the lane's thread (resuming it if it is not
// loaded) and compact it now, whatever the usage.
func (c *compaction) item(ctx context.Context, l *lane, it item) {
	defer c.inbox.set(ctx, it.inboundID, store.InboundDone)
	thread, err := c.loader.load(ctx, l)
	switch {
	case errors.Is(err, ErrNothingToCompact):
		c.out.Notify(ctx, l.addr, it.msgID, "Nothing to compact: this conversation has no Codex thread yet.")
		return
	case err != nil:
		c.log.Warn("thread.compact_load_failed", zap.String("lane", l.key), zap.Error(err))
		c.out.Notify(ctx, l.addr, it.msgID, "Could not compact: the Codex thread could not be opened ("+briefError(err)+").")
		return
	}
	before, after, err := c.run(ctx, l, thread)
	if err != nil {
		c.out.Notify(ctx, l.addr, it.msgID, "Compaction failed: "+briefError(err)+" The conversation continues in the same thread.")
		return
	}
	c.out.Notify(ctx, l.addr, it.msgID, fmt.Sprintf("Compacted: context %d → %d tokens.", before, after))
}

// compactionStatus is the /status line about compaction.
func (c *compaction) status(sl store.Lane) string {
	policy := "automatic compaction off"
	if c.at > 0 {
		policy = fmt.Sprintf("automatic above %.0f%% of the window", c.at*100)
	}
	at, err := time.Parse(time.RFC3339, sl.Meta[metaCompactAt])
	if err != nil {
		return "Compaction: " + policy + "; none yet\n"
	}
	return fmt.Sprintf("Compaction: %s; last %s ago, %s → %s tokens\n", policy, roundAge(c.now().Sub(at)),
		sl.Meta[metaCompactBefore], sl.Meta[metaCompactAfter])
}

// register adds /compact, which queues like a message, the automatic
// compaction before a turn and the /status line.
func (c *compaction) register(h *host) {
	if c.at > 0 { // lanes.compact_at 0: no automatic compaction, no step in every turn
		h.hooks.ready = append(h.hooks.ready, c.auto)
	}
	h.hooks.status = append(h.hooks.status, func(_ context.Context, sl store.Lane, b *strings.Builder) {
		b.WriteString(c.status(sl))
	})
	h.command("compact", func(ctx context.Context, call commandCall) bool {
		c.sched.enqueue(ctx, call.lane, item{kind: itemCompact, inboundID: call.inboundID, msgID: call.msgID})
		return false // the queued compaction marks the inbound done
	})
}
