// Package backoff computes retry delays: exponential growth from a first
// delay up to a cap, with jitter so that retries of many lanes, or of
// several restarts, do not fire in lockstep.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// DefaultJitter is the random share of each delay: a delay falls between
// 80% and 100% of its exponential value. Jitter only shortens a delay, so
// a caller (or a test with a fake clock) that waits the full exponential
// value always finds the retry due.
const DefaultJitter = 0.2

// Backoff is one retry sequence. The zero Jitter means DefaultJitter; a
// negative one turns jitter off. Not safe for concurrent use: each retry
// loop owns its own.
type Backoff struct {
	First, Max time.Duration
	Jitter     float64
	// Rand returns a number in [0, 1); default math/rand/v2.Float64.
	Rand func() float64

	failures int
}

// New returns a sequence from first up to max.
func New(first, max time.Duration) *Backoff {
	return &Backoff{First: first, Max: max}
}

// Next returns the delay before the next attempt and counts a failure.
func (b *Backoff) Next() time.Duration {
	d := b.At(b.failures)
	b.failures++
	return d
}

// Reset starts the sequence again from First (after a success).
func (b *Backoff) Reset() { b.failures = 0 }

// At returns the delay after the given number of earlier failures, for
// callers that keep the count themselves (the outbox keeps it per row).
func (b *Backoff) At(failures int) time.Duration {
	return b.jitter(b.exponential(failures))
}

func (b *Backoff) exponential(failures int) time.Duration {
	d := max(b.First, time.Nanosecond)
	for i := 0; i < failures && (b.Max <= 0 || d < b.Max); i++ {
		d *= 2
	}
	if b.Max > 0 {
		d = min(d, b.Max)
	}
	return d
}

func (b *Backoff) jitter(d time.Duration) time.Duration {
	j := b.Jitter
	switch {
	case j == 0:
		j = DefaultJitter
	case j < 0:
		return d
	}
	r := rand.Float64
	if b.Rand != nil {
		r = b.Rand
	}
	return d - time.Duration(j*r()*float64(d))
}

// Sleep waits d, or until ctx ends; it reports whether the full wait passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
