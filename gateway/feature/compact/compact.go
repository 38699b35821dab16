// Package compact is /compact and the automatic compaction of a lane's
// Codex thread above lanes.compact_at.
package compact

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// Compaction is driven by the usage codex reports for the thread (its last
// request's tokens against the model's context window), never by an estimate
// of our transcript. Above Config.At the thread is compacted natively
// before the next turn, and the attempt starts a cooldown of
// Config.CooldownTurns turns, so a compaction that shrinks nothing (or
// fails) cannot run again on every turn. A failed compaction changes
// nothing else: the live thread stays loaded and bound, the turn runs, and
// the transcript is never touched.

// Lane metadata keys recording the last compaction (shown by /status).
const (
	metaCompactAt     = "compaction.last_at"
	metaCompactBefore = "compaction.tokens_before"
	metaCompactAfter  = "compaction.tokens_after"
)

// Config is when compaction runs.
type Config struct {
	// At is the fraction of the context window (codex-reported usage)
	// above which a lane's thread is compacted before its next turn
	// (lanes.compact_at); 0: no automatic compaction.
	At float64
	// CooldownTurns is how many turns must run after a compaction before
	// an automatic one is tried again; 0 is
	// config.DefaultCompactCooldownTurns.
	CooldownTurns int
}

// Store is the part of the store compaction uses.
type Store interface {
	RecordCompaction(ctx context.Context, sessionKey, threadID string, before, after int64) error
	SetMeta(ctx context.Context, sessionKey string, meta map[string]string) error
}

// Runtime is the part of codex compaction uses.
type Runtime interface {
	Usage(threadID string) (codex.Usage, bool)
	Compact(ctx context.Context, threadID string) (before, after codex.Usage, err error)
}

var (
	_ Store   = (*store.Store)(nil)
	_ Runtime = (*codex.Client)(nil)
)

// Compaction is /compact and the automatic compaction above
// lanes.compact_at.
type Compaction struct {
	cfg  Config
	st   Store
	cx   Runtime
	host ext.Host
	log  *zap.Logger

	mu sync.Mutex
	// hold counts, per lane, the turns that must still run before an
	// automatic compaction may be tried again (the cooldown); a lane out
	// of its cooldown has no entry, so the map holds only lanes that
	// compacted lately.
	hold map[string]int
}

// New is compaction as cfg sets it, over st and cx.
func New(cfg Config, st Store, cx Runtime) *Compaction {
	if cfg.CooldownTurns == 0 {
		cfg.CooldownTurns = config.DefaultCompactCooldownTurns
	}
	return &Compaction{cfg: cfg, st: st, cx: cx, hold: make(map[string]int)}
}

// Name is the feature's name.
func (c *Compaction) Name() string { return "compact" }

// Register adds /compact, which queues like a message, the automatic
// compaction before a turn and the /status line.
func (c *Compaction) Register(h ext.Host) error {
	if err := config.CheckCompactAt(c.cfg.At); err != nil {
		return err
	}
	if c.cfg.CooldownTurns < 1 {
		return fmt.Errorf("compact: the cooldown must be at least 1 turn, got %d", c.cfg.CooldownTurns)
	}
	c.host, c.log = h, h.Logger()
	if c.cfg.At > 0 { // lanes.compact_at 0: no automatic compaction, no step in every turn
		h.OnReady(c.auto)
	}
	h.OnStatus(func(_ context.Context, sl store.Lane, b *strings.Builder) {
		b.WriteString(c.status(sl))
	})
	h.Command(ext.Command{Name: "compact", Description: "Compact this conversation's Codex thread", Menu: true,
		Run: func(ctx context.Context, call ext.Call) bool {
			call.QueueTask(ctx, func(ctx context.Context) { c.compactNow(ctx, call.Lane, call.MsgID) })
			return false // the queued compaction marks the inbound done
		}})
	return nil
}

// holdCompaction reports whether the lane's compaction cooldown still
// holds, and counts this turn against it.
func (c *Compaction) holdCompaction(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.hold[key]
	switch {
	case n > 1:
		c.hold[key] = n - 1
	case n == 1:
		delete(c.hold, key)
	default:
		return false
	}
	return true
}

// startCooldown makes the lane's next CooldownTurns turns run before an
// automatic compaction may be tried again.
func (c *Compaction) startCooldown(key string) {
	c.mu.Lock()
	c.hold[key] = c.cfg.CooldownTurns
	c.mu.Unlock()
}

// auto compacts the turn's thread first when codex reports its
// context above the threshold and the cooldown allows it.
func (c *Compaction) auto(ctx context.Context, t ext.Turn) {
	thread := t.Thread()
	if thread == "" {
		return
	}
	l := t.Lane()
	if c.holdCompaction(l.Key()) {
		return
	}
	u, ok := c.cx.Usage(thread)
	if !ok || u.ContextWindow <= 0 || float64(u.LastTotalTokens) < c.cfg.At*float64(u.ContextWindow) {
		return
	}
	c.log.Info("thread.compact_auto", zap.String("lane", l.Key()), zap.String("thread", thread),
		zap.Int64("tokens", u.LastTotalTokens), zap.Int64("window", u.ContextWindow))
	t.SetCompacting(true)
	before, after, err := c.run(ctx, l.Key(), thread)
	t.SetCompacting(false)
	if err != nil {
		c.host.Notify(ctx, l.Address(), "", "Could not compact this conversation's context ("+ext.BriefError(err)+
			"); continuing in the same Codex thread.")
		return
	}
	c.host.Notify(ctx, l.Address(), "", fmt.Sprintf("Compacted this conversation's context before answering: %d → %d tokens.", before, after))
}

// run runs native compaction on a loaded thread, records it and starts
// the cooldown. It never releases, retires or replaces the thread.
func (c *Compaction) run(ctx context.Context, key, thread string) (before, after int64, err error) {
	defer c.startCooldown(key)
	b, a, err := c.cx.Compact(ctx, thread)
	if err != nil {
		c.log.Warn("thread.compact_failed", zap.String("lane", key), zap.String("thread", thread), zap.Error(err))
		return 0, 0, err
	}
	before, after = b.LastTotalTokens, a.LastTotalTokens
	if before > 0 && after >= before {
		c.log.Warn("thread.compact_shrank_nothing", zap.String("lane", key), zap.Int64("before", before), zap.Int64("after", after))
	}
	if err := c.st.RecordCompaction(ctx, key, thread, before, after); err != nil {
		c.log.Error("thread.compaction_record_failed", zap.String("lane", key), zap.Error(err))
	}
	meta := map[string]string{metaCompactAt: c.host.Now().UTC().Format(time.RFC3339),
		metaCompactBefore: strconv.FormatInt(before, 10), metaCompactAfter: strconv.FormatInt(after, 10)}
	if err := c.st.SetMeta(ctx, key, meta); err != nil {
		c.log.Error("thread.compaction_meta_failed", zap.String("lane", key), zap.Error(err))
	}
	c.log.Info("thread.compacted", zap.String("lane", key), zap.String("thread", thread),
		zap.Int64("before", before), zap.Int64("after", after))
	return before, after, nil
}

// compactNow is /compact, in the lane's order: load the lane's thread
// (resuming it if it is not loaded) and compact it now, whatever the
// usage.
func (c *Compaction) compactNow(ctx context.Context, l ext.Lane, msgID string) {
	thread, err := l.LoadThread(ctx)
	switch {
	case errors.Is(err, ext.ErrNoThread):
		c.host.Notify(ctx, l.Address(), msgID, "Nothing to compact: this conversation has no Codex thread yet.")
		return
	case err != nil:
		c.log.Warn("thread.compact_load_failed", zap.String("lane", l.Key()), zap.Error(err))
		c.host.Notify(ctx, l.Address(), msgID, "Could not compact: the Codex thread could not be opened ("+ext.BriefError(err)+").")
		return
	}
	before, after, err := c.run(ctx, l.Key(), thread)
	if err != nil {
		c.host.Notify(ctx, l.Address(), msgID, "Compaction failed: "+ext.BriefError(err)+" The conversation continues in the same thread.")
		return
	}
	c.host.Notify(ctx, l.Address(), msgID, fmt.Sprintf("Compacted: context %d → %d tokens.", before, after))
}

// status is the /status line about compaction.
func (c *Compaction) status(sl store.Lane) string {
	policy := "automatic compaction off"
	if c.cfg.At > 0 {
		policy = fmt.Sprintf("automatic above %.0f%% of the window", c.cfg.At*100)
	}
	at, err := time.Parse(time.RFC3339, sl.Meta[metaCompactAt])
	if err != nil {
		return "Compaction: " + policy + "; none yet\n"
	}
	return fmt.Sprintf("Compaction: %s; last %s ago, %s → %s tokens\n", policy, chat.Age(c.host.Now().Sub(at)),
		sl.Meta[metaCompactBefore], sl.Meta[metaCompactAfter])
}
