package gateway

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway/feature/compact"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// usageOf makes the fake codex report lastTotal tokens of a 1000-token window.
func usageOf(lastTotal *atomic.Int64) func(string) (codex.Usage, bool) {
	return func(string) (codex.Usage, bool) {
		return codex.Usage{LastTotalTokens: lastTotal.Load(), TotalTokens: 50 * lastTotal.Load(), ContextWindow: 1000}, true
	}
}

func TestAutoCompactionOnceWithCooldown(t *testing.T) {
	h := newHarness(t).compacting(t, compact.Config{At: 0.8, CooldownTurns: 3})
	var used atomic.Int64
	used.Store(100)
	h.cx.usageFn = usageOf(&used)
	h.start(t)
	h.send(t, "a", "m1", "one")
	collect(t, h.p, "m1")
	used.Store(900) // codex reports 90% of the window after the turn
	// Usage stays high: a compaction that shrank nothing must not run again
	// on every turn (the seed's loop), only after the cooldown.
	for i, id := range []string{"m2", "m3", "m4", "m5"} {
		h.send(t, "a", id, "turn "+id)
		got, notices := collect(t, h.p, id)
		if got[id].Text != "re: turn "+id {
			t.Errorf("%s answered %q", id, got[id].Text)
		}
		wantNotice := i == 0
		if hasNotice := len(notices) == 1 && strings.Contains(notices[0], "Compacted this conversation's context"); hasNotice != wantNotice {
			t.Errorf("%s notices %q, want compaction notice: %v", id, notices, wantNotice)
		}
	}
	if len(h.cx.compactCalls()) != 1 || len(h.st.compactionRows()) != 1 || h.st.compactionRows()[0] != "t1:100:10" {
		t.Fatalf("compactions codex %v store %v, want one t1:100:10", h.cx.compactCalls(), h.st.compactionRows())
	}
	h.send(t, "a", "m6", "turn m6") // cooldown over, still above: once more
	collect(t, h.p, "m6")
	if len(h.cx.compactCalls()) != 2 {
		t.Errorf("after the cooldown compactions %v, want 2", h.cx.compactCalls())
	}
	if _, released, _ := h.cx.snapshot(); len(released) != 0 {
		t.Errorf("released %v: compaction must never release the thread", released)
	}
	h.send(t, "a", "s1", "/status")
	if o := h.p.replyTo(t, "s1"); !strings.Contains(o.Text, "Context: 900 / 1000 tokens (90%)") ||
		!strings.Contains(o.Text, "Compaction: automatic above 80% of the window; last 0s ago, 100 → 10 tokens") {
		t.Errorf("/status:\n%s", o.Text)
	}
}

func TestFailedCompactionKeepsLaneWorking(t *testing.T) {
	h := newHarness(t).compacting(t, compact.Config{At: 0.5})
	var used atomic.Int64
	used.Store(100)
	h.cx.usageFn = usageOf(&used)
	h.cx.compactFn = func(string) (codex.Usage, codex.Usage, error) {
		return codex.Usage{}, codex.Usage{}, errors.New("codex: compaction of t1 ended failed: HTTP 500")
	}
	h.start(t)
	h.send(t, "a", "m1", "one")
	collect(t, h.p, "m1")
	used.Store(800)
	h.send(t, "a", "m2", "two")
	got, notices := collect(t, h.p, "m2")
	if got["m2"].Text != "re: two" {
		t.Errorf("turn after a failed compaction answered %q", got["m2"].Text)
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "Could not compact") || !strings.Contains(notices[0], "same Codex thread") {
		t.Errorf("notices %q", notices)
	}
	_, released, turns := h.cx.snapshot()
	if len(released) != 0 || turns[len(turns)-1] != "t1:two" || h.st.lane("v1:test:a").ThreadID != "t1" {
		t.Errorf("after a failed compaction: released %v turns %v binding %q; want t1 kept", released, turns, h.st.lane("v1:test:a").ThreadID)
	}
	if len(h.st.compactionRows()) != 0 {
		t.Errorf("a failed compaction was recorded: %v", h.st.compactionRows())
	}
	h.send(t, "a", "c1", "/compact")
	if o := h.p.replyTo(t, "c1"); !strings.Contains(o.Text, "Compaction failed") || !strings.Contains(o.Text, "same thread") {
		t.Errorf("/compact failing: %q", o.Text)
	}
}

func TestForcedCompactResumesUnloadedThread(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.IdleEvict = config.DefaultIdleEvict }) // the daemon's default
	h.start(t)
	h.send(t, "a", "c0", "/compact")
	if o := h.p.replyTo(t, "c0"); !strings.Contains(o.Text, "Nothing to compact") {
		t.Errorf("/compact without a thread: %q", o.Text)
	}
	h.send(t, "a", "m1", "one")
	collect(t, h.p, "m1")
	waitFor(t, "lane idle", func() bool { return h.g.Stats().ActiveLanes == 0 })
	h.clock.Advance(time.Hour)
	if n := h.g.EvictIdle(context.Background()); n != 1 {
		t.Fatalf("evicted %d, want 1", n)
	}
	h.send(t, "a", "c1", "/compact")
	if o := h.p.replyTo(t, "c1"); o.Text != "Compacted: context 100 → 10 tokens." {
		t.Errorf("/compact of an evicted thread: %q", o.Text)
	}
	ensures, _, _ := h.cx.snapshot()
	if ensures[len(ensures)-1] != "t1" || len(h.cx.compactCalls()) != 1 || h.cx.compactCalls()[0] != "t1" {
		t.Errorf("ensures %v compacts %v, want t1 resumed then compacted", ensures, h.cx.compactCalls())
	}
}
