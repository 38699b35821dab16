// Package testclock is a settable clock for tests, so behaviour that
// depends on time is tested by moving the clock, not by sleeping.
package testclock

import (
	"sync"
	"time"
)

// Start is where a new Clock stands: a fixed instant, so tests read the
// same dates on every run.
var Start = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Clock is a settable clock; safe for concurrent use.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New returns a Clock at Start.
func New() *Clock { return &Clock{t: Start} }

// Now is the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}
