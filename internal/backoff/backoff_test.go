package backoff

import (
	"context"
	"testing"
	"time"
)

func TestSequenceDoublesToTheCap(t *testing.T) {
	b := &Backoff{First: time.Second, Max: 5 * time.Second, Jitter: -1}
	want := []time.Duration{1, 2, 4, 5, 5}
	for i, w := range want {
		if got := b.Next(); got != w*time.Second {
			t.Errorf("delay %d = %v, want %v", i, got, w*time.Second)
		}
	}
	b.Reset()
	if got := b.Next(); got != time.Second {
		t.Errorf("after Reset delay = %v, want 1s", got)
	}
}

func TestJitterOnlyShortensWithinItsShare(t *testing.T) {
	tests := []struct {
		name string
		rand float64
		want time.Duration
	}{
		{name: "no luck", rand: 0, want: 4 * time.Second},
		{name: "half", rand: 0.5, want: 3600 * time.Millisecond},
		{name: "most", rand: 0.75, want: 3400 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := &Backoff{First: time.Second, Max: time.Minute, Rand: func() float64 { return tt.rand }}
			got := b.At(2)
			if got > 4*time.Second || got < 3200*time.Millisecond {
				t.Fatalf("At(2) = %v, want within [3.2s, 4s]", got)
			}
			if diff := got - tt.want; diff < -time.Microsecond || diff > time.Microsecond {
				t.Errorf("At(2) = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDefaultJitterVaries(t *testing.T) {
	b := New(time.Second, time.Minute)
	seen := map[time.Duration]bool{}
	for range 20 {
		seen[b.At(3)] = true
	}
	if len(seen) < 2 {
		t.Errorf("20 delays were all %v: no jitter", seen)
	}
}

func TestSleepStopsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if Sleep(ctx, time.Hour) {
		t.Error("Sleep on a cancelled context reported a full wait")
	}
	if !Sleep(context.Background(), time.Nanosecond) {
		t.Error("a 1ns Sleep did not complete")
	}
}
