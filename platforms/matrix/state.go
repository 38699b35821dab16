package matrix

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"
	"maunium.net/go/mautrix/id"
)

// lru is a small bounded map: the oldest entry goes when it is full.
type lru[V any] struct {
	mu    sync.Mutex
	max   int
	order []string
	m     map[string]V
}

func newLRU[V any](max int) *lru[V] { return &lru[V]{max: max, m: map[string]V{}} }

func (l *lru[V]) get(k string) (V, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok := l.m[k]
	return v, ok
}

func (l *lru[V]) put(k string, v V) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.m[k]; !ok {
		l.order = append(l.order, k)
		if len(l.order) > l.max {
			delete(l.m, l.order[0])
			l.order = l.order[1:]
		}
	}
	l.m[k] = v
}

// previewTimes remembers the streamed previews this process posted and
// when each was last edited (the edit throttle).
type previewTimes struct{ *lru[time.Time] }

func (p previewTimes) touch(id string, at time.Time) { p.put(id, at) }

// cooldown reports whether the homeserver's rate limit is still asking us
// to wait, and how long. Homeservers limit per user, not per room, so one
// wait covers every room. During it sends and edits fail at once with
// RetryAfterError and typing is skipped: the outbox and the preview
// streamer would otherwise hammer a homeserver that asked us to slow down.
func (a *Adapter) cooldown() (time.Duration, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	left := a.cooling.Sub(a.cfg.Now())
	return left, left > 0
}

func (a *Adapter) noteRateLimit(err error) {
	d, ok := retryAfter(err)
	if !ok {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if until := a.cfg.Now().Add(d); until.After(a.cooling) {
		a.cooling = until
	}
}

// engage records a thread the bot speaks in: in a shared room, messages in
// it are addressed to the bot without a mention (as Discord threads the
// bot answered). Kept in the cursor store so a restart keeps it.
func (a *Adapter) engage(ctx context.Context, room id.RoomID, root id.EventID) {
	key := string(room) + "|" + string(root)
	if _, ok := a.threads.get(key); ok {
		return
	}
	a.threads.put(key, true)
	if err := a.cfg.Cursor.SetCursor(ctx, engagedCursor(room, root), "1"); err != nil {
		a.log.Warn("matrix: could not record a thread the bot speaks in", zap.Error(err))
	}
}

func (a *Adapter) engaged(ctx context.Context, room id.RoomID, root id.EventID) bool {
	key := string(room) + "|" + string(root)
	if v, ok := a.threads.get(key); ok {
		return v
	}
	_, ok, err := a.cfg.Cursor.Cursor(ctx, engagedCursor(room, root))
	if err == nil {
		a.threads.put(key, ok)
	}
	return ok
}

func engagedCursor(room id.RoomID, root id.EventID) string {
	return "matrix.thread:" + string(room) + ":" + string(root)
}
