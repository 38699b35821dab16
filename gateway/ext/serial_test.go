package ext

import (
	"sync"
	"testing"
)

// Values pushed from one goroutine are handled in their order, one at a
// time, and none is lost while a drain is running.
func TestSerialKeepsOrder(t *testing.T) {
	var got []int
	var running, overlap bool
	var mu sync.Mutex
	done := make(chan struct{})
	s := NewSerial(func(v int) {
		mu.Lock()
		if running {
			overlap = true
		}
		running = true
		got = append(got, v)
		mu.Unlock()
		mu.Lock()
		running = false
		mu.Unlock()
		if v == 999 {
			close(done)
		}
	})
	for i := range 1000 {
		s.Push(i)
	}
	<-done
	mu.Lock()
	defer mu.Unlock()
	if overlap || len(got) != 1000 {
		t.Fatalf("handled %d values, overlapping %v", len(got), overlap)
	}
	for i, v := range got {
		if v != i {
			t.Fatalf("value %d handled at %d", v, i)
		}
	}
}
