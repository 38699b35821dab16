package gateway

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/store"
)

func TestLRUEvictionThenResume(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.MaxLive = 1 })
	h.start(t)
	h.send(t, "a", "a1", "remember A")
	h.p.replyTo(t, "a1")
	// Busy lanes are skipped, so let lane a's worker finish first to make
	// it the one evictable least recently used lane.
	waitFor(t, "lane a idle", func() bool { return h.laneIdle(laneA) })
	h.send(t, "b", "b1", "remember B")
	h.p.replyTo(t, "b1")
	waitFor(t, "lane a evicted", func() bool {
		_, rel, _ := h.cx.snapshot()
		return fmt.Sprint(rel) == "[t1]"
	})
	if s := h.g.Stats(); s.LiveLanes != 1 {
		t.Errorf("live lanes %d, want 1", s.LiveLanes)
	}
	if l := h.st.lane(laneA); l.ThreadID != "t1" || l.Binding != store.BindingConfirmed {
		t.Errorf("eviction touched the binding: %q %q", l.ThreadID, l.Binding)
	}
	h.send(t, "a", "a2", "what was it?")
	if o := h.p.replyTo(t, "a2"); o.Turn.ThreadID != "t1" {
		t.Errorf("after eviction lane a answered on %q, want t1 resumed", o.Turn.ThreadID)
	}
	ensures, _, _ := h.cx.snapshot()
	if got := ensures[len(ensures)-1]; got != "t1" {
		t.Errorf("resume asked for %q, want stored t1", got)
	}
}

// IdleEvict 0 means never, as lanes.idle_evict: 0 does.
func TestZeroIdleEvictNeverEvicts(t *testing.T) {
	h := newHarness(t)
	h.start(t)
	h.send(t, "a", "a1", "quick")
	h.p.replyTo(t, "a1")
	waitFor(t, "lane a worker exits", func() bool { return h.laneIdle(laneA) })
	h.clock.Advance(1000 * time.Hour)
	if n := h.g.EvictIdle(context.Background()); n != 0 {
		t.Errorf("EvictIdle with IdleEvict 0 released %d lanes, want none", n)
	}
	if s := h.g.Stats(); s.LiveLanes != 1 {
		t.Errorf("live lanes %d, want lane a's thread still loaded", s.LiveLanes)
	}
}

func TestIdleEvictionSkipsBusyLanes(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.IdleEvict = time.Hour })
	gt := newGate()
	h.cx.run = gt.run
	h.start(t)
	h.send(t, "a", "a1", "quick")
	gt.open("quick")
	h.p.replyTo(t, "a1")
	waitFor(t, "lane a worker exits", func() bool { return h.laneIdle(laneA) })
	h.send(t, "b", "b1", "slow")
	<-gt.entered // lane a's entry
	<-gt.entered // lane b's entry: b is running now
	h.clock.Advance(2 * time.Hour)
	if n := h.g.EvictIdle(context.Background()); n != 1 {
		t.Errorf("EvictIdle released %d lanes, want 1 (lane b runs a turn)", n)
	}
	_, rel, _ := h.cx.snapshot()
	if fmt.Sprint(rel) != "[t1]" {
		t.Errorf("released %v, want only lane a's t1", rel)
	}
	gt.open("slow")
	h.p.replyTo(t, "b1")
	waitFor(t, "lane b worker exits", func() bool { return h.laneIdle("v1:test:b") })
	if n := h.g.EvictIdle(context.Background()); n != 0 {
		t.Errorf("lane b was just used; EvictIdle released %d", n)
	}
	h.clock.Advance(2 * time.Hour)
	if n := h.g.EvictIdle(context.Background()); n != 1 {
		t.Errorf("EvictIdle after b went idle released %d, want 1", n)
	}
	if s := h.g.Stats(); s.LiveLanes != 0 {
		t.Errorf("live lanes %d after idle eviction", s.LiveLanes)
	}
	h.g.lanes.mu.Lock()
	n := len(h.g.lanes.lanes)
	h.g.lanes.mu.Unlock()
	if n != 0 {
		t.Errorf("%d idle lanes still held in memory", n)
	}
}

func (h *harness) laneIdle(key string) bool {
	l := h.g.lanes.lookup(key)
	if l == nil {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snapshotLocked().idle()
}
