package poll

import (
	"sync/atomic"
	"testing"
	"time"
)

// A condition that comes true with a Notify is seen.
func TestWaitSeesAConditionSetWithNotify(t *testing.T) {
	var b Broadcast
	var ready atomic.Bool
	go func() {
		ready.Store(true)
		b.Notify()
	}()
	if !Wait(time.Minute, b.Wait, ready.Load) {
		t.Fatal("the condition set with a Notify was not seen")
	}
}

// A waiter registered before Notify is woken by it.
func TestNotifyWakesAWaiter(t *testing.T) {
	var b Broadcast
	woken := b.Wait()
	b.Notify()
	select {
	case <-woken:
	default:
		t.Fatal("Notify did not close the channel Wait returned")
	}
}

func TestWaitReportsAConditionThatNeverHolds(t *testing.T) {
	calls := 0
	if Wait(3*Interval, nil, func() bool { calls++; return false }) {
		t.Fatal("Wait reported a condition that never held")
	}
	if calls < 2 {
		t.Fatalf("cond checked %d times, want it checked again after the interval", calls)
	}
}

// Notify with no one waiting is not remembered as a wake-up for later
// waiters, and does not panic on a second call.
func TestNotifyWithoutWaiters(t *testing.T) {
	var b Broadcast
	b.Notify()
	b.Notify()
	select {
	case <-b.Wait():
		t.Fatal("a fresh Wait fired without a Notify after it")
	default:
	}
}
