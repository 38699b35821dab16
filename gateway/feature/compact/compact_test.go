package compact

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// fakeCodex reports used of a 1000-token window and compacts to 10.
type fakeCodex struct {
	mu        sync.Mutex
	used      int64
	err       error
	compacted []string
}

func (c *fakeCodex) Usage(string) (codex.Usage, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return codex.Usage{LastTotalTokens: c.used, ContextWindow: 1000}, true
}

func (c *fakeCodex) Compact(_ context.Context, thread string) (codex.Usage, codex.Usage, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.compacted = append(c.compacted, thread)
	if c.err != nil {
		return codex.Usage{}, codex.Usage{}, c.err
	}
	return codex.Usage{LastTotalTokens: c.used}, codex.Usage{LastTotalTokens: 10}, nil
}

func (c *fakeCodex) calls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.compacted)
}

// fakeStore records compactions and lane metadata.
type fakeStore struct {
	mu    sync.Mutex
	rows  []string
	metas map[string]map[string]string
}

func (s *fakeStore) RecordCompaction(_ context.Context, key, thread string, before, after int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rows = append(s.rows, fmt.Sprintf("%s:%s:%d:%d", key, thread, before, after))
	return nil
}

func (s *fakeStore) SetMeta(_ context.Context, key string, meta map[string]string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.metas == nil {
		s.metas = map[string]map[string]string{}
	}
	s.metas[key] = meta
	return nil
}

func newLane() *exttest.Lane {
	return &exttest.Lane{Addr: chat.Address{Platform: "api", ChatID: "a"}, Thread: "t1"}
}

func turnOf(l ext.Lane) *exttest.Turn {
	return &exttest.Turn{L: l, TurnUsage: exttest.TurnUsage{ThreadID: "t1"}}
}

// Above the threshold the thread is compacted before the turn, marked as
// compacting meanwhile, recorded and told; the cooldown then skips the
// next CooldownTurns turns however full the context stays.
func TestAutoCompactionCoolsDown(t *testing.T) {
	h := exttest.NewHost(t)
	cx, st := &fakeCodex{used: 900}, &fakeStore{}
	h.Register(t, New(Config{At: 0.8, CooldownTurns: 2}, st, cx))
	l := newLane()
	first := turnOf(l)
	h.Ready(context.Background(), first)
	if cx.calls() != 1 || len(st.rows) != 1 || st.rows[0] != l.Key()+":t1:900:10" {
		t.Fatalf("compactions codex %d store %v, want one of t1 900 → 10", cx.calls(), st.rows)
	}
	if got := first.Compacting(); len(got) != 2 || !got[0] || got[1] {
		t.Errorf("SetCompacting %v, want true then false", got)
	}
	if meta := st.metas[l.Key()]; meta[metaCompactBefore] != "900" || meta[metaCompactAfter] != "10" || meta[metaCompactAt] == "" {
		t.Errorf("lane metadata %v", meta)
	}
	n := h.Notices()
	if len(n) != 1 || n[0].Text != "Compacted this conversation's context before answering: 900 → 10 tokens." {
		t.Errorf("notices %+v", n)
	}
	for range 2 {
		h.Ready(context.Background(), turnOf(l))
	}
	if cx.calls() != 1 {
		t.Fatalf("compacted %d times during the cooldown, want 1", cx.calls())
	}
	h.Ready(context.Background(), turnOf(l))
	if cx.calls() != 2 {
		t.Errorf("compacted %d times after the cooldown, want 2", cx.calls())
	}
}

// A failed compaction is told, recorded nowhere, and starts the cooldown
// too: it is not tried again on the next turn.
func TestAutoCompactionFailureCoolsDown(t *testing.T) {
	h := exttest.NewHost(t)
	cx, st := &fakeCodex{used: 900, err: errors.New("codex: compaction failed: HTTP 500")}, &fakeStore{}
	h.Register(t, New(Config{At: 0.8, CooldownTurns: 1}, st, cx))
	l := newLane()
	h.Ready(context.Background(), turnOf(l))
	h.Ready(context.Background(), turnOf(l))
	if cx.calls() != 1 || len(st.rows) != 0 {
		t.Errorf("codex %d store %v, want one attempt and nothing recorded", cx.calls(), st.rows)
	}
	if n := h.Notices(); len(n) != 1 || !strings.HasPrefix(n[0].Text, "Could not compact this conversation's context (") {
		t.Errorf("notices %+v", n)
	}
}

// Below the threshold, or with no thread loaded, nothing runs; with
// lanes.compact_at 0 no hook is even registered.
func TestAutoCompactionOnlyAboveThreshold(t *testing.T) {
	h := exttest.NewHost(t)
	cx := &fakeCodex{used: 700}
	h.Register(t, New(Config{At: 0.8}, &fakeStore{}, cx))
	l := newLane()
	h.Ready(context.Background(), turnOf(l))
	h.Ready(context.Background(), &exttest.Turn{L: l})
	if cx.calls() != 0 {
		t.Errorf("compacted %d times, want none", cx.calls())
	}
	off := exttest.NewHost(t)
	off.Register(t, New(Config{}, &fakeStore{}, cx))
	if off.Readies() != 0 {
		t.Errorf("compact_at 0 registered %d ready hooks", off.Readies())
	}
}

// /compact queues a task that loads the lane's thread and compacts it
// whatever the usage; a lane without a thread is told so.
func TestCompactCommand(t *testing.T) {
	h := exttest.NewHost(t)
	cx, st := &fakeCodex{used: 100}, &fakeStore{}
	h.Register(t, New(Config{}, st, cx))
	ctx := context.Background()
	l := newLane()
	if done := h.Run(ctx, l, "compact", "", "m1"); done {
		t.Error("/compact reported done; its task closes the row")
	}
	if cx.calls() != 0 {
		t.Fatal("/compact compacted before its task ran")
	}
	l.RunQueued(ctx)
	none := newLane()
	none.Thread, none.ThreadErr = "", ext.ErrNoThread
	h.Run(ctx, none, "compact", "", "m2")
	none.RunQueued(ctx)
	n := h.Notices()
	if len(n) != 2 || n[0].ReplyTo != "m1" || n[0].Text != "Compacted: context 100 → 10 tokens." ||
		n[1].ReplyTo != "m2" || n[1].Text != "Nothing to compact: this conversation has no Codex thread yet." {
		t.Errorf("notices %+v", n)
	}
	if cx.calls() != 1 {
		t.Errorf("compacted %d times, want 1", cx.calls())
	}
}

// /status says the policy and the last compaction.
func TestCompactionStatus(t *testing.T) {
	h := exttest.NewHost(t)
	h.Register(t, New(Config{At: 0.8}, &fakeStore{}, &fakeCodex{}))
	if got := h.Status(context.Background(), store.Lane{}); got != "Compaction: automatic above 80% of the window; none yet\n" {
		t.Errorf("status %q", got)
	}
	at := h.Now().Add(-2 * time.Minute).UTC().Format(time.RFC3339)
	sl := store.Lane{Meta: map[string]string{metaCompactAt: at, metaCompactBefore: "900", metaCompactAfter: "10"}}
	if got := h.Status(context.Background(), sl); got != "Compaction: automatic above 80% of the window; last 2m0s ago, 900 → 10 tokens\n" {
		t.Errorf("status %q", got)
	}
}

// A threshold out of range is refused when the feature registers.
func TestCompactRefusesBadThreshold(t *testing.T) {
	if err := New(Config{At: 1.5}, &fakeStore{}, &fakeCodex{}).Register(exttest.NewHost(t)); err == nil {
		t.Error("compact_at 1.5 accepted")
	}
}
