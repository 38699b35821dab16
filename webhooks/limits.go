package webhooks

import (
	"sync"
	"time"

	"go.uber.org/zap"
)

// rateLimiter lets each hook take at most its max_per_minute deliveries
// in any minute: a sender with the secret, or a leaked one,
// cannot queue turns faster than that. It keeps the times of the last
// deliveries taken, at most max per hook, so its memory is bounded by the
// configuration.
type rateLimiter struct {
	mu    sync.Mutex
	taken map[string][]time.Time // hook → deliveries taken in the last minute, oldest first
}

const rateWindow = time.Minute

// take counts a delivery of hook at now when fewer than max were taken in
// the minute before; otherwise it counts nothing and says how long until
// one of those leaves the window.
func (l *rateLimiter) take(hook string, max int, now time.Time) (retryAfter time.Duration, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.taken == nil {
		l.taken = map[string][]time.Time{}
	}
	times := l.taken[hook]
	cut := 0
	for cut < len(times) && !times[cut].After(now.Add(-rateWindow)) {
		cut++
	}
	times = times[cut:]
	if len(times) >= max {
		l.taken[hook] = times
		return times[0].Add(rateWindow).Sub(now), false
	}
	l.taken[hook] = append(times, now)
	return 0, true
}

// refusalLog writes at most one webhooks.refused line per hook per
// interval: a sender refused in a loop, or a scan of hook
// names, must not fill the journal. The next line written says how many
// were left out since the one before; the metric counts every refusal.
// Names no hook has share one entry, so the map is bounded by the hooks.
type refusalLog struct {
	log   *zap.Logger
	every time.Duration

	mu   sync.Mutex
	last map[string]*refusalState
}

type refusalState struct {
	at         time.Time // when the last line was written
	suppressed int       // refusals since, not written
}

const refusalLogInterval = time.Minute

// warn writes the refusal unless hook had a line within the interval.
func (l *refusalLog) warn(hook string, now time.Time, fields []zap.Field) {
	l.mu.Lock()
	if l.last == nil {
		l.last = map[string]*refusalState{}
	}
	st := l.last[hook]
	if st != nil && now.Sub(st.at) < l.every {
		st.suppressed++
		l.mu.Unlock()
		return
	}
	suppressed := 0
	if st != nil {
		suppressed = st.suppressed
	}
	l.last[hook] = &refusalState{at: now}
	l.mu.Unlock()
	l.log.Warn("webhooks.refused", append(fields, zap.Int("suppressed", suppressed))...)
}
