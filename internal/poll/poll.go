// Package poll is how tests wait for what they cannot be told: state in
// another process (a daemon's database, its HTTP answers) or in a goroutine
// that offers no signal. Every such wait in the tests goes through here, so
// there is one interval, one deadline rule and one failure message; where a
// signal exists (a log line arriving, a value changing), the wait wakes on
// it instead of on the clock.
package poll

import (
	"sync"
	"testing"
	"time"
)

// A condition is checked again after firstInterval, then after twice as
// long each time up to Interval: a quick condition is seen quickly, a slow
// one (a daemon starting, a lease expiring) is not asked a thousand times.
const (
	firstInterval = time.Millisecond
	Interval      = 50 * time.Millisecond
)

// Until checks cond until it holds, failing t with what if it does not
// within the given time.
func Until(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Wait(within, nil, cond) {
		t.Fatalf("timed out after %v waiting for %s", within, what)
	}
}

// Wait checks cond until it holds or within passes, and reports whether it
// held. It checks again whenever the channel changed returns is closed, and
// at least every Interval (changed may be nil: the clock alone).
// Broadcast.Wait is such a function.
func Wait(within time.Duration, changed func() <-chan struct{}, cond func() bool) bool {
	deadline := time.NewTimer(within)
	defer deadline.Stop()
	pause := firstInterval
	tick := time.NewTimer(pause)
	defer tick.Stop()
	for {
		var wake <-chan struct{}
		if changed != nil {
			wake = changed() // taken before cond, so no change is missed
		}
		if cond() {
			return true
		}
		select {
		case <-wake:
		case <-tick.C:
			pause = min(2*pause, Interval)
			tick.Reset(pause)
		case <-deadline.C:
			return cond()
		}
	}
}

// Broadcast wakes every waiter each time Notify is called. Its zero value
// is ready to use.
type Broadcast struct {
	mu sync.Mutex
	ch chan struct{}
}

// Wait returns a channel closed by the next Notify.
func (b *Broadcast) Wait() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch == nil {
		b.ch = make(chan struct{})
	}
	return b.ch
}

// Notify wakes everyone waiting.
func (b *Broadcast) Notify() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.ch != nil {
		close(b.ch)
		b.ch = nil
	}
}
