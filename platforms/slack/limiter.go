package slack

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
)

// Slack's pace for posts: about one message a second per channel, with
// short bursts (a reply's first parts go at once).
const (
	postsPerSecond = 1
	postBurst      = 3
	updateBurst    = 5
	maxBuckets     = 1000
)

// limiter keeps the adapter under Slack's limits. After a 429 on a
// method every call of it waits out Retry-After (Slack's limits are per
// method and workspace, so one lane's 429 is every lane's). chat.update
// (tier 3, about 50 a minute for the workspace) draws from one token
// bucket, chat.postMessage from one per channel.
type limiter struct {
	now     func() time.Time
	mu      sync.Mutex
	paused  map[string]time.Time // method → until
	updates *bucket
	posts   map[string]*bucket // by channel
}

// bucket is a token bucket: burst tokens, one more every per.
type bucket struct {
	tokens, burst float64
	per           time.Duration
	refilled      time.Time
}

func newBucket(burst int, per time.Duration, now time.Time) *bucket {
	return &bucket{tokens: float64(burst), burst: float64(burst), per: per, refilled: now}
}

// take takes a token and says how long to wait for it.
func (b *bucket) take(now time.Time) time.Duration {
	b.tokens = min(b.burst, b.tokens+float64(now.Sub(b.refilled))/float64(b.per))
	b.refilled = now
	b.tokens--
	if b.tokens < 0 {
		return time.Duration(-b.tokens * float64(b.per))
	}
	return 0
}

func newLimiter(now func() time.Time, updatesPerMinute int) *limiter {
	return &limiter{now: now, paused: map[string]time.Time{},
		updates: newBucket(updateBurst, time.Minute/time.Duration(updatesPerMinute), now()),
		posts:   map[string]*bucket{}}
}

// wait blocks until method may be called (in channel, for a per-channel
// limit). When the wait would outlast ctx's deadline it returns a
// RetryAfterError at once, so the outbox reschedules instead of holding
// a worker.
func (l *limiter) wait(ctx context.Context, method, channel string) error {
	d := l.reserve(method, channel)
	if d <= 0 {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok && l.now().Add(d).After(dl) {
		l.refund(method, channel)
		return &gateway.RetryAfterError{After: d, Err: fmt.Errorf("slack: %s: rate limited", method)}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// reserve takes the call's turn and says how long to wait for it.
func (l *limiter) reserve(method, channel string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	wait := l.paused[method].Sub(now)
	if b := l.bucketLocked(method, channel, now); b != nil {
		wait = max(wait, b.take(now))
	}
	return wait
}

func (l *limiter) bucketLocked(method, channel string, now time.Time) *bucket {
	switch {
	case method == "chat.update":
		return l.updates
	case method == "chat.postMessage" && channel != "":
		b := l.posts[channel]
		if b == nil {
			if len(l.posts) >= maxBuckets {
				clear(l.posts) // idle channels' buckets are full anyway
			}
			b = newBucket(postBurst, time.Second/postsPerSecond, now)
			l.posts[channel] = b
		}
		return b
	}
	return nil
}

// refund gives back a token reserved but not used.
func (l *limiter) refund(method, channel string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.bucketLocked(method, channel, l.now()); b != nil {
		b.tokens = min(b.burst, b.tokens+1)
	}
}

// observe pauses method after a 429.
func (l *limiter) observe(method string, err error) {
	var ra *gateway.RetryAfterError
	if !errors.As(err, &ra) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if until := l.now().Add(ra.After); until.After(l.paused[method]) {
		l.paused[method] = until
	}
}
