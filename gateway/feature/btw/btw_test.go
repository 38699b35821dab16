package btw

import (
	"context"
	"errors"
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
	return store.Lane{SessionKey: key, ThreadID: "t1"}, nil
}

// fakeRuntime forks, answers and releases, recording the threads.
type fakeRuntime struct {
	forkErr  error
	forks    []string // parents forked
	ran      []string // thread:text
	released []string
}

func (r *fakeRuntime) ForkThread(_ context.Context, parent string, cfg codex.ForkConfig) (string, error) {
	if !cfg.Ephemeral {
		return "", errors.New("fork not ephemeral")
	}
	r.forks = append(r.forks, parent)
	return "side-" + parent, r.forkErr
}

func (r *fakeRuntime) RunTurn(_ context.Context, thread string, in codex.TurnInput, _ codex.TurnEvents) (codex.TurnResult, error) {
	r.ran = append(r.ran, thread+":"+in.Text)
	return codex.TurnResult{Status: "completed", Text: "ANSWER"}, nil
}

func (r *fakeRuntime) Release(_ context.Context, thread string) error {
	r.released = append(r.released, thread)
	return nil
}

// TestSideQuestion: /btw queues a task that asks on an ephemeral fork of
// the lane's thread, answers with the side-answer prefix and releases the
// fork; without a thread or a question it only answers.
func TestSideQuestion(t *testing.T) {
	addr := chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}
	tests := []struct {
		name      string
		args      string
		thread    string
		threadErr error
		forkErr   error
		want      string
		wantForks int
	}{
		{"answered on a fork", "why?", "t1", nil, nil, answerPrefix + "ANSWER", 1},
		{"no thread yet", "why?", "", ext.ErrNoThread, nil, "no Codex thread yet", 0},
		{"fork refused", "why?", "t1", nil, errors.New("boom"), "did not fork its thread (boom)", 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, cx := exttest.NewHost(t), &fakeRuntime{forkErr: tc.forkErr}
			h.Register(t, New(fakeStore{}, cx))
			ctx, lane := context.Background(), &exttest.Lane{Addr: addr, Thread: tc.thread, ThreadErr: tc.threadErr}
			if done := h.Run(ctx, lane, "btw", tc.args, "m1"); done {
				t.Fatal("/btw closed its row at once, want its task to")
			}
			if q := lane.Queued(); len(q) != 1 || q[0].Task == nil || q[0].InboundID != 1 {
				t.Fatalf("queued %+v, want one task for the call's row", q)
			}
			lane.RunQueued(ctx)
			n := h.Notices()
			if len(n) != 1 || n[0].ReplyTo != "m1" || !strings.Contains(n[0].Text, tc.want) {
				t.Fatalf("notices %+v, want one reply to m1 with %q", n, tc.want)
			}
			if len(cx.forks) != tc.wantForks {
				t.Errorf("forked %v, want %d fork", cx.forks, tc.wantForks)
			}
			if tc.forkErr == nil && tc.wantForks == 1 && (len(cx.released) != 1 || cx.ran[0] != "side-t1:why?") {
				t.Errorf("ran %v, released %v: want the question on the fork, then the fork released", cx.ran, cx.released)
			}
		})
	}
}

// TestSideQuestionNeedsAQuestion: /btw alone answers with the usage and
// queues nothing.
func TestSideQuestionNeedsAQuestion(t *testing.T) {
	h := exttest.NewHost(t)
	h.Register(t, New(fakeStore{}, &fakeRuntime{}))
	l := &exttest.Lane{Addr: chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}}
	if !h.Run(context.Background(), l, "btw", "", "m1") {
		t.Fatal("/btw without a question left its row open")
	}
	if n := h.Notices(); len(n) != 1 || !strings.HasPrefix(n[0].Text, "Usage: /btw") || len(l.Queued()) != 0 {
		t.Errorf("notices %+v, queued %d: want the usage only", n, len(l.Queued()))
	}
}
