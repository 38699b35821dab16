package undo

import (
	"context"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

type fakeStore struct{}

func (fakeStore) Lane(_ context.Context, key string) (store.Lane, error) {
	return store.Lane{SessionKey: key}, nil
}

type fakeRuntime struct {
	turns    []codex.TurnSummary
	reverted []string // thread:turn
}

func (r *fakeRuntime) Turns(context.Context, string) ([]codex.TurnSummary, error) {
	return r.turns, nil
}

func (r *fakeRuntime) RevertThread(_ context.Context, thread, turn string) error {
	r.reverted = append(r.reverted, thread+":"+turn)
	return nil
}

// TestUndo: /undo waits for a quiet lane; it reverts the newest turn that
// began with a message (a compaction after it goes with it) and says the
// files stayed when the lane has no worktree; without a thread or turns
// there is nothing to undo.
func TestUndo(t *testing.T) {
	addr := chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}
	turns := []codex.TurnSummary{{ID: "t1", UserText: "first"}, {ID: "t2", UserText: "second  one"}, {ID: "t3"}}
	tests := []struct {
		name         string
		lane         func() *exttest.Lane
		turns        []codex.TurnSummary
		want         string
		wantReverted string
	}{
		{"while a turn runs", func() *exttest.Lane { return &exttest.Lane{Addr: addr, Busy: true} }, turns,
			ext.BetweenTurnsText("undo"), ""},
		{"no thread", func() *exttest.Lane { return &exttest.Lane{Addr: addr, ThreadErr: ext.ErrNoThread} }, turns,
			"Nothing to undo: this conversation has no Codex thread yet.", ""},
		{"no turns", func() *exttest.Lane { return &exttest.Lane{Addr: addr, Thread: "th"} }, nil,
			"Nothing to undo: this conversation's Codex thread has no turns left.", ""},
		{"no worktree", func() *exttest.Lane {
			return &exttest.Lane{Addr: addr, Thread: "th", TreeWhy: "This conversation has no project."}
		}, turns, `Undid the last turn ("second one"): Codex's history no longer has it, and its files were not restored: this conversation has no project.`, "th:t2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, cx, l := exttest.NewHost(t), &fakeRuntime{turns: tc.turns}, tc.lane()
			h.Register(t, New(fakeStore{}, cx))
			ctx := context.Background()
			h.Run(ctx, l, "undo", "", "m1")
			l.RunQueued(ctx)
			n := h.Notices()
			if len(n) != 1 || !strings.HasPrefix(n[0].Text, tc.want) {
				t.Fatalf("notices %+v, want one starting %q", n, tc.want)
			}
			if got := strings.Join(cx.reverted, ","); got != tc.wantReverted {
				t.Errorf("reverted %q, want %q", got, tc.wantReverted)
			}
		})
	}
}
