package threads

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

type fakeStore struct {
	lane     store.Lane
	claim    store.ThreadClaim
	bindErr  error
	attached string
}

func (s *fakeStore) Lane(context.Context, string) (store.Lane, error) { return s.lane, nil }

func (s *fakeStore) ThreadClaim(context.Context, string, string) (store.ThreadClaim, error) {
	return s.claim, nil
}

func (s *fakeStore) AttachThread(_ context.Context, _ string, _ int64, id string) error {
	if s.bindErr != nil {
		return s.bindErr
	}
	s.attached = id
	return nil
}

type fakeRuntime struct{ threads []codex.ThreadSummary }

func (r fakeRuntime) ListThreads(context.Context, codex.ThreadFilter) ([]codex.ThreadSummary, error) {
	return r.threads, nil
}

// TestAttach: /attach takes a thread of the lane's project by a unique
// prefix of its id, and refuses one another lane holds, an ambiguous
// prefix and a thread codex cannot resume as itself, changing nothing.
func TestAttach(t *testing.T) {
	listed := fakeRuntime{threads: []codex.ThreadSummary{{ID: "abc1"}, {ID: "abd2"}, {ID: "xyz"}}}
	tests := []struct {
		name     string
		arg      string
		st       fakeStore
		outcome  codex.Outcome
		want     string
		attached string
	}{
		{"by prefix", "abc", fakeStore{lane: store.Lane{ThreadID: "old"}}, codex.OutcomeResumed,
			"Attached thread abc1; the next message continues it here. The previous thread old is kept", "abc1"},
		{"ambiguous", "ab", fakeStore{}, codex.OutcomeResumed, `"ab" is the start of 2 threads (abc1, abd2)`, ""},
		{"not listed", "q", fakeStore{}, codex.OutcomeResumed, `No thread listed for this conversation's project (/p) starts with "q"`, ""},
		{"held elsewhere", "xyz", fakeStore{claim: store.ThreadClaim{Lane: "other", Held: true}}, codex.OutcomeResumed,
			"Thread xyz is held by another conversation", ""},
		{"held at the bind", "xyz", fakeStore{bindErr: store.ErrThreadHeld}, codex.OutcomeResumed,
			"Thread xyz is held by another conversation", ""},
		{"not resumable", "xyz", fakeStore{}, codex.OutcomeReplaced, "Could not resume thread xyz", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := exttest.NewHost(t)
			h.Dir = "/p"
			h.Register(t, New(&tc.st, listed, ""))
			l := &exttest.Lane{Addr: chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}, AdoptOutcome: tc.outcome}
			ctx := context.Background()
			h.Run(ctx, l, "attach", tc.arg, "m1")
			l.RunQueued(ctx)
			if n := h.Notices(); len(n) != 1 || !strings.HasPrefix(n[0].Text, tc.want) {
				t.Fatalf("notices %+v, want one starting %q", n, tc.want)
			}
			if tc.st.attached != tc.attached || l.Adopted != tc.attached {
				t.Errorf("attached %q (lane adopted %q), want %q", tc.st.attached, l.Adopted, tc.attached)
			}
		})
	}
}

// TestHandoff: /handoff releases the lane's thread and prints the command
// that resumes it where the lane works, CODEX_HOME named and quoted.
func TestHandoff(t *testing.T) {
	h := exttest.NewHost(t)
	h.Dir = "/work/my lane"
	st := &fakeStore{lane: store.Lane{ThreadID: "th1", Binding: store.BindingConfirmed}}
	h.Register(t, New(st, fakeRuntime{}, "/home/codex"))
	l := &exttest.Lane{Addr: chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}}
	ctx := context.Background()
	h.Run(ctx, l, "handoff", "", "m1")
	l.RunQueued(ctx)
	n := h.Notices()
	if len(n) != 1 || !strings.Contains(n[0].Text, "cd '/work/my lane' && CODEX_HOME=/home/codex codex resume th1") || !l.Released {
		t.Errorf("notices %+v, released %v: want the thread released and the command printed", n, l.Released)
	}
}

// TestAttachOtherWriter: /attach of a thread another Codex client writes
// to says so, changes nothing, and offers both ways out: attach again
// once it is closed there, or fork it, with a button where there are
// buttons and the command in the text for where there are none.
func TestAttachOtherWriter(t *testing.T) {
	listed := fakeRuntime{threads: []codex.ThreadSummary{{ID: "abc1"}}}
	h := exttest.NewHost(t)
	h.Dir = "/p"
	st := &fakeStore{lane: store.Lane{ThreadID: "old"}}
	h.Register(t, New(st, listed, ""))
	held := fmt.Errorf("codex: thread/resume: %w", codex.ErrStaleWriter)
	l := &exttest.Lane{Addr: chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"}, AdoptErr: held}
	ctx := context.Background()
	h.Run(ctx, l, "attach", "abc", "m1")
	l.RunQueued(ctx)
	n := h.Notices()
	if len(n) != 1 {
		t.Fatalf("notices %+v, want one", n)
	}
	for _, want := range []string{"Thread abc1 is open in another Codex client", "one client at a time", "/attach abc1 again", "/fork abc1"} {
		if !strings.Contains(n[0].Text, want) {
			t.Errorf("answer %q lacks %q", n[0].Text, want)
		}
	}
	if len(n[0].Buttons) != 1 || n[0].Buttons[0].ID != "cmd:fork abc1" {
		t.Errorf("buttons %+v, want one running /fork abc1", n[0].Buttons)
	}
	if st.attached != "" || l.Adopted != "" {
		t.Errorf("attached %q (adopted %q) though another client writes to it", st.attached, l.Adopted)
	}
}

// TestHandoffWriters: /handoff of a thread another client already writes
// to says the terminal would be refused too and offers /fork, releasing
// nothing; a release that fails says how to make the gateway let go.
func TestHandoffWriters(t *testing.T) {
	tests := []struct {
		name        string
		loadErr     error
		releaseErr  error
		want        []string
		released    bool
		forkOffered bool
	}{
		{"released", nil, nil, []string{"has let go of this conversation's thread", "codex resume th1", "a message here is refused"}, true, false},
		{"another writer", fmt.Errorf("x: %w", codex.ErrStaleWriter), nil,
			[]string{"already open in another Codex client", "Quit it there first", "codex resume th1", "/fork"}, false, true},
		{"release failed", nil, errors.New("codex: timeout"),
			[]string{"Could not make the gateway let go of thread th1", "restart gatewayd", "codex resume th1"}, true, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := exttest.NewHost(t)
			h.Dir = "/w"
			st := &fakeStore{lane: store.Lane{ThreadID: "th1", Binding: store.BindingConfirmed}}
			h.Register(t, New(st, fakeRuntime{}, ""))
			l := &exttest.Lane{Addr: chat.Address{Platform: "test", Kind: chat.LaneAPI, ChatID: "a"},
				Thread: "th1", ThreadErr: tc.loadErr, ReleaseErr: tc.releaseErr}
			ctx := context.Background()
			h.Run(ctx, l, "handoff", "", "m1")
			l.RunQueued(ctx)
			n := h.Notices()
			if len(n) != 1 {
				t.Fatalf("notices %+v, want one", n)
			}
			for _, want := range tc.want {
				if !strings.Contains(n[0].Text, want) {
					t.Errorf("answer %q lacks %q", n[0].Text, want)
				}
			}
			if l.Released != tc.released {
				t.Errorf("released %v, want %v", l.Released, tc.released)
			}
			if got := len(n[0].Buttons) == 1 && n[0].Buttons[0].ID == "cmd:fork"; got != tc.forkOffered {
				t.Errorf("buttons %+v, fork offered: want %v", n[0].Buttons, tc.forkOffered)
			}
		})
	}
}
