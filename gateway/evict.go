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

// markLive records that the lane's thread is loaded and most recently used,
// then evicts the least recently used idle lanes beyond MaxLive.
func (g *Gateway) markLive(ctx context.Context, l *lane, threadID string) {
	l.mu.Lock()
	l.thread = threadID
	l.lastUsed = g.now().UnixNano()
	l.mu.Unlock()
	g.lanes.touch(l)
	g.trimLive(ctx, l)
}

// trimLive evicts the least recently used idle lanes beyond MaxLive, never
// keep. Busy lanes are skipped; trimLive runs again when their worker exits.
func (g *Gateway) trimLive(ctx context.Context, keep *lane) {
	excess, candidates := g.lanes.overLimit(g.cfg.MaxLive, keep)
	for _, v := range candidates {
		if excess <= 0 {
			return
		}
		if g.evict(ctx, v, "lru") {
			excess--
		}
	}
}

// EvictIdle releases the threads of lanes idle for IdleEvict or longer and
// returns how many it released. The eviction loop calls it periodically;
// tests call it after moving the injected clock.
func (g *Gateway) EvictIdle(ctx context.Context) int {
	if g.cfg.IdleEvict <= 0 { // never, as lanes.idle_evict: 0
		return 0
	}
	cutoff := g.now().Add(-g.cfg.IdleEvict).UnixNano()
	victims := g.lanes.usedBefore(cutoff)
	n := 0
	for _, v := range victims {
		if g.evict(ctx, v, "idle") {
			n++
		}
	}
	return n
}

// evict releases the lane's thread if the lane is idle. It skips a lane
// whose worker is loading its thread right now.
func (g *Gateway) evict(ctx context.Context, l *lane, why string) bool {
	if !l.opMu.TryLock() {
		return false
	}
	defer l.opMu.Unlock()
	l.mu.Lock()
	if !l.idle() || l.thread == "" {
		l.mu.Unlock()
		return false
	}
	thread := l.thread
	l.thread, l.stale = "", false
	l.mu.Unlock()
	g.lanes.unlive(l)
	g.release(ctx, l.key, thread, why)
	g.forget(l)
	return true
}

func (g *Gateway) release(ctx context.Context, key, thread, why string) {
	if err := g.cx.Release(ctx, thread); err != nil {
		g.log.Warn("thread.release_failed", zap.String("lane", key), zap.String("thread", thread), zap.Error(err))
		return
	}
	g.log.Info("thread.released", zap.String("lane", key), zap.String("thread", thread), zap.String("why", why))
}

// releaseStale releases a thread left loaded by a reset generation. The
// caller holds l.opMu.
func (g *Gateway) releaseStale(ctx context.Context, l *lane) {
	l.mu.Lock()
	if !l.stale || l.thread == "" {
		l.stale = false
		l.mu.Unlock()
		return
	}
	thread := l.thread
	l.thread, l.stale = "", false
	l.mu.Unlock()
	g.lanes.unlive(l)
	g.release(ctx, l.key, thread, "reset")
}

// evictLoop runs EvictIdle every quarter of IdleEvict (at most once a
// minute, at least once a second).
func (g *Gateway) evictLoop(ctx context.Context) {
	if g.cfg.IdleEvict <= 0 { // never, as lanes.idle_evict: 0
		return
	}
	every := min(max(g.cfg.IdleEvict/4, time.Second), time.Minute)
	tick, stop := g.newTicker(every)
	defer stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			g.EvictIdle(ctx)
		}
	}
}
