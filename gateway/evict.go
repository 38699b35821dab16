package gateway

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// Eviction keeps at most MaxLive threads loaded in the app-server and
// releases threads idle longer than IdleEvict. Releasing is the only effect:
// the binding stays in the store, so the lane's next message resumes the
// same thread. A lane with a running turn or queued messages is never
// evicted.

// threadCache keeps the lanes' threads loaded in the app-server: at most
// maxLive, the least recently used idle ones released first, and any idle
// for idleEvict released (0: never).
type threadCache struct {
	lanes *laneTable
	cx    interface {
		Release(ctx context.Context, threadID string) error
	}
	log       *zap.Logger
	now       func() time.Time
	maxLive   int
	idleEvict time.Duration
}

// markLive records that the lane's thread is loaded and most recently used,
// then evicts the least recently used idle lanes beyond MaxLive.
func (c *threadCache) markLive(ctx context.Context, l *lane, threadID string) {
	l.live.set(threadID, c.now().UnixNano())
	c.lanes.touch(l)
	c.trimLive(ctx, l)
}

// trimLive evicts the least recently used idle lanes beyond MaxLive, never
// keep. Busy lanes are skipped; trimLive runs again when their worker exits.
func (c *threadCache) trimLive(ctx context.Context, keep *lane) {
	excess, candidates := c.lanes.overLimit(c.maxLive, keep)
	for _, v := range candidates {
		if excess <= 0 {
			return
		}
		if c.evict(ctx, v, "lru") {
			excess--
		}
	}
}

// EvictIdle releases the threads of lanes idle for IdleEvict or longer and
// returns how many it released. The eviction loop calls it periodically;
// tests call it after moving the injected clock.
func (c *threadCache) evictIdle(ctx context.Context) int {
	if c.idleEvict <= 0 { // never, as lanes.idle_evict: 0
		return 0
	}
	cutoff := c.now().Add(-c.idleEvict).UnixNano()
	victims := c.lanes.usedBefore(cutoff)
	n := 0
	for _, v := range victims {
		if c.evict(ctx, v, "idle") {
			n++
		}
	}
	return n
}

// evict releases the lane's thread if the lane is idle. It skips a lane
// whose worker is loading its thread right now.
func (c *threadCache) evict(ctx context.Context, l *lane, why string) bool {
	if !l.opMu.TryLock() {
		return false
	}
	defer l.opMu.Unlock()
	thread := l.takeIdleThread()
	if thread == "" {
		return false
	}
	c.lanes.unlive(l)
	c.release(ctx, l.key, thread, why)
	c.lanes.forget(l)
	return true
}

// release is unload for a caller that goes on either way: a failure is
// logged.
func (c *threadCache) release(ctx context.Context, key, thread, why string) {
	if err := c.unload(ctx, key, thread, why); err != nil {
		c.log.Warn("thread.release_failed", zap.String("lane", key), zap.String("thread", thread), zap.Error(err))
	}
}

// unload releases thread from the app-server, whether or not a lane of
// this node holds it (a lane stepped down from may be forgotten while
// codex still has its thread, and a restore of its rollout must unload
// it), and says why not when it cannot (a turn still runs on it).
func (c *threadCache) unload(ctx context.Context, key, thread, why string) error {
	if err := c.cx.Release(ctx, thread); err != nil {
		return err
	}
	c.log.Info("thread.released", zap.String("lane", key), zap.String("thread", thread), zap.String("why", why))
	return nil
}

// releaseStale releases a thread left loaded by a reset generation. The
// caller holds l.opMu.
func (c *threadCache) releaseStale(ctx context.Context, l *lane) {
	thread := l.live.takeStale()
	if thread == "" {
		return
	}
	c.lanes.unlive(l)
	c.release(ctx, l.key, thread, "reset")
}

// evictLoop runs EvictIdle every quarter of IdleEvict (at most once a
// minute, at least once a second).
func (c *threadCache) loop(ctx context.Context, newTicker tickerFunc) {
	if c.idleEvict <= 0 { // never, as lanes.idle_evict: 0
		return
	}
	every := min(max(c.idleEvict/4, time.Second), time.Minute)
	tick, stop := newTicker(every)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			c.evictIdle(ctx)
		}
	}
}
