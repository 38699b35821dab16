package fork

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/gateway/ext/exttest"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// fakeStore keeps lanes by session key; claims are the threads other
// lanes hold or let go of.
type fakeStore struct {
	lanes  map[string]store.Lane
	claims map[string]store.ThreadClaim
}

func (s *fakeStore) ThreadClaim(_ context.Context, thread, _ string) (store.ThreadClaim, error) {
	return s.claims[thread], nil
}

func (s *fakeStore) Lane(_ context.Context, key string) (store.Lane, error) {
	if sl, ok := s.lanes[key]; ok {
		return sl, nil
	}
	return store.Lane{}, store.ErrNotFound
}

func (s *fakeStore) EnsureLane(_ context.Context, k store.LaneKey) (store.Lane, error) {
	if _, ok := s.lanes[k.SessionKey]; !ok {
		s.lanes[k.SessionKey] = store.Lane{SessionKey: k.SessionKey, Generation: 1, Meta: map[string]string{}}
	}
	return s.lanes[k.SessionKey], nil
}

func (s *fakeStore) SetProject(_ context.Context, key, name string) error {
	sl := s.lanes[key]
	sl.Project = name
	s.lanes[key] = sl
	return nil
}

func (s *fakeStore) SetMeta(_ context.Context, key string, meta map[string]string) error {
	for k, v := range meta {
		s.lanes[key].Meta[k] = v
	}
	return nil
}

func (s *fakeStore) BindThread(_ context.Context, key string, _ int64, thread string) error {
	sl := s.lanes[key]
	sl.ThreadID = thread
	s.lanes[key] = sl
	return nil
}

type fakeRuntime struct {
	released []string
	listed   []codex.ThreadSummary
}

func (r *fakeRuntime) ListThreads(context.Context, codex.ThreadFilter) ([]codex.ThreadSummary, error) {
	return r.listed, nil
}

func (r *fakeRuntime) ForkThread(_ context.Context, parent string, _ codex.ForkConfig) (string, error) {
	return parent + "-fork", nil
}

func (r *fakeRuntime) Release(_ context.Context, thread string) error {
	r.released = append(r.released, thread)
	return nil
}

// TestFork: /fork opens a place beside the lane, records the child lane
// with the parent's project and the title, binds it the forked thread and
// answers with the fork; a platform that cannot open a place, or a chat
// that cannot hold one, is told so and nothing is made.
func TestFork(t *testing.T) {
	near := chat.Address{Platform: "test", Kind: chat.LaneGroup, ChatID: "g"}
	child := chat.Address{Platform: "test", Kind: chat.LaneTopic, ChatID: "g", TopicID: "7"}
	open := func(context.Context, chat.Address, string) (chat.Address, error) { return child, nil }
	noPlace := func(context.Context, chat.Address, string) (chat.Address, error) {
		return chat.Address{}, fmt.Errorf("%w: this group has no topics", chat.ErrNoPlace)
	}
	tests := []struct {
		name string
		open func(context.Context, chat.Address, string) (chat.Address, error)
		want string
		made bool
	}{
		{"made", open, `Forked into "kiwi": thread t1-fork. Files: not copied (No project).`, true},
		{"platform cannot open", nil, "Cannot fork here: this platform cannot open another conversation.", false},
		{"chat cannot hold one", noPlace, "Cannot fork here: this chat cannot hold another conversation: this group has no topics", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &fakeStore{lanes: map[string]store.Lane{
				near.SessionKey(): {SessionKey: near.SessionKey(), Project: "app", Meta: map[string]string{"title": "parent"}}}}
			h, cx := exttest.NewHost(t), &fakeRuntime{}
			h.Open = tc.open
			h.Register(t, New(st, cx))
			l := &exttest.Lane{Addr: near, Thread: "t1", TreeWhy: "No project."}
			ctx := context.Background()
			h.Run(ctx, l, "fork", " kiwi ", "m1")
			l.RunQueued(ctx)
			n := h.Notices()
			last := n[len(n)-1]
			if last.Text != tc.want || last.ReplyTo != "m1" {
				t.Fatalf("answer %q, want %q", last.Text, tc.want)
			}
			c, made := st.lanes[child.SessionKey()]
			if made != tc.made || (last.Fork != nil) != tc.made {
				t.Fatalf("child lane made %v, fork in the answer %+v; want made %v", made, last.Fork, tc.made)
			}
			if !tc.made {
				return
			}
			if c.Project != "app" || c.Meta["title"] != "kiwi" || c.ThreadID != "t1-fork" || strings.Join(cx.released, ",") != "t1-fork" {
				t.Errorf("child %+v, released %v: want the parent's project, the title and the fork bound, released", c, cx.released)
			}
			if *last.Fork != (ext.Fork{Lane: child.SessionKey(), ThreadID: "t1-fork"}) {
				t.Errorf("fork %+v", *last.Fork)
			}
			if len(n) != 2 || n[0].Addr != child || !strings.HasPrefix(n[0].Text, `Forked from "parent fork"`) {
				t.Errorf("notices %+v, want the child told first", n)
			}
		})
	}
}

// TestForkParent: /fork forks the lane's thread even while another Codex
// client writes to it (codex forks from the rollout), and /fork ID [title]
// forks a thread listed for the lane's project that no other lane holds
// or let go of, refusing the others with nothing made.
func TestForkParent(t *testing.T) {
	near := chat.Address{Platform: "test", Kind: chat.LaneGroup, ChatID: "g"}
	child := chat.Address{Platform: "test", Kind: chat.LaneTopic, ChatID: "g", TopicID: "7"}
	const free, other = "01a2483d-c3a9-7263-a7f9-b917568279e0", "01a2483d-0000-7000-8000-000000000000"
	held := fmt.Errorf("codex: thread/resume: %w", codex.ErrStaleWriter)
	tests := []struct {
		name    string
		args    string
		loadErr error
		want    string // the answer's start
		title   string // the child's, when made
	}{
		{"own thread, written elsewhere", "", held, "Forked into \"parent fork\": thread own-fork.", "parent fork"},
		{"a listed thread", free + " kiwi", nil, "Forked into \"kiwi\": thread " + free + "-fork.", "kiwi"},
		{"not listed", "01a2483d-ffff-7000-8000-000000000000", nil, "No thread 01a2483d-ffff-7000-8000-000000000000 is listed", ""},
		{"another lane's", other, nil, "Thread " + other + " is another conversation's", ""},
		{"a title, not an id", "01a2483d kiwi", nil, "Forked into \"01a2483d kiwi\": thread own-fork.", "01a2483d kiwi"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &fakeStore{lanes: map[string]store.Lane{
				near.SessionKey(): {SessionKey: near.SessionKey(), ThreadID: "own", Meta: map[string]string{"title": "parent"}}},
				claims: map[string]store.ThreadClaim{other: {Lane: "v1:test:elsewhere", Held: true}}}
			cx := &fakeRuntime{listed: []codex.ThreadSummary{{ID: free}, {ID: other}}}
			h := exttest.NewHost(t)
			h.Open = func(context.Context, chat.Address, string) (chat.Address, error) { return child, nil }
			h.Register(t, New(st, cx))
			l := &exttest.Lane{Addr: near, Thread: "own", ThreadErr: tc.loadErr, TreeWhy: "No project."}
			ctx := context.Background()
			h.Run(ctx, l, "fork", tc.args, "m1")
			l.RunQueued(ctx)
			n := h.Notices()
			if last := n[len(n)-1]; !strings.HasPrefix(last.Text, tc.want) {
				t.Fatalf("answer %q, want it to start %q", last.Text, tc.want)
			}
			c, made := st.lanes[child.SessionKey()]
			if made != (tc.title != "") || (made && c.Meta["title"] != tc.title) {
				t.Errorf("child %+v (made %v), want title %q", c, made, tc.title)
			}
		})
	}
}
