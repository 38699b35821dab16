package gateway

import (
	"context"
	"errors"
	"slices"

	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// The thread operations of the coding commands (/undo, /review, /fork,
// /btw, /threads) are tested against the real app-server
// (*_integration_test.go); the in-process fake refuses them, which the
// commands must report as a failure.
var errFakeThreadOp = errors.New("fake codex: thread operation not faked")

func (c *fakeCodex) Turns(context.Context, string) ([]codex.TurnSummary, error) {
	return nil, errFakeThreadOp
}

func (c *fakeCodex) RevertThread(context.Context, string, string) error { return errFakeThreadOp }

func (c *fakeCodex) RunReview(ctx context.Context, thread string, target codex.ReviewTarget, ev codex.TurnEvents) (codex.TurnResult, error) {
	if c.reviewFn != nil {
		return c.reviewFn(ctx, thread, target, ev)
	}
	return codex.TurnResult{}, errFakeThreadOp
}

func (c *fakeCodex) ForkThread(context.Context, string, codex.ForkConfig) (string, error) {
	return "", errFakeThreadOp
}

func (c *fakeCodex) ListThreads(context.Context, codex.ThreadFilter) ([]codex.ThreadSummary, error) {
	return nil, errFakeThreadOp
}

// ThreadClaim and AttachThread keep the real store's rule: a thread
// bound (pending or confirmed) to one lane, or ever bound to it, is
// refused to another.
func (s *fakeStore) ThreadClaim(_ context.Context, thread, except string) (store.ThreadClaim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.claimLocked(thread, except), nil
}

func (s *fakeStore) claimLocked(thread, except string) store.ThreadClaim {
	for key, l := range s.lanes {
		if key != except && l.ThreadID == thread && (l.Binding == store.BindingPending || l.Binding == store.BindingConfirmed) {
			return store.ThreadClaim{Lane: key, Held: true}
		}
	}
	for _, key := range s.boundTo[thread] {
		if key != except {
			return store.ThreadClaim{Lane: key}
		}
	}
	return store.ThreadClaim{}
}

// recordBoundLocked remembers that key was bound to thread.
func (s *fakeStore) recordBoundLocked(thread, key string) {
	if s.boundTo == nil {
		s.boundTo = map[string][]string{}
	}
	if !slices.Contains(s.boundTo[thread], key) {
		s.boundTo[thread] = append(s.boundTo[thread], key)
	}
}

func (s *fakeStore) AttachThread(_ context.Context, key string, gen int64, thread string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.lanes[key]
	if l == nil || l.Generation != gen {
		return store.ErrStaleGeneration
	}
	if c := s.claimLocked(thread, key); c.Held {
		return store.ErrThreadHeld
	} else if c.Lane != "" {
		return store.ErrThreadReleased
	}
	l.ThreadID, l.Binding = thread, store.BindingPending
	s.bindings = append(s.bindings, "attach:"+thread)
	s.recordBoundLocked(thread, key)
	return nil
}

// AddRoomLine and TakeRoomLines keep the room's talk in memory, one line
// per message id, as the real store does.
func (s *fakeStore) AddRoomLine(_ context.Context, l store.RoomLine) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.room == nil {
		s.room = map[string][]store.RoomLine{}
	}
	for _, old := range s.room[l.SessionKey] {
		if old.MessageID == l.MessageID {
			return nil
		}
	}
	s.room[l.SessionKey] = append(s.room[l.SessionKey], l)
	return nil
}

func (s *fakeStore) TakeRoomLines(_ context.Context, key string, limit int) ([]store.RoomLine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	lines := s.room[key]
	delete(s.room, key)
	if limit > 0 && len(lines) > limit {
		lines = lines[len(lines)-limit:]
	}
	return lines, nil
}

func (s *fakeStore) SetInboundText(_ context.Context, id int64, text string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.inbound {
		if s.inbound[i].ID == id {
			s.inbound[i].Text = text
			return nil
		}
	}
	return store.ErrNotFound
}

func (s *fakeStore) inboundRows() []store.InboundRow {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]store.InboundRow(nil), s.inbound...)
}

// ListMCPServers, ReloadMCPServers and ListSkills are an app-server's
// without them: method not found (feature/toolbox's own tests and the
// real app-server's cover them).
func (c *fakeCodex) ListMCPServers(context.Context, string) ([]codex.MCPServer, error) {
	return nil, &codex.RPCError{Method: "mcpServerStatus/list", Code: -32601, Message: "method not found"}
}

func (c *fakeCodex) ReloadMCPServers(context.Context) error {
	return &codex.RPCError{Method: "config/mcpServer/reload", Code: -32601, Message: "method not found"}
}

func (c *fakeCodex) ListSkills(context.Context, string) ([]codex.Skill, []codex.SkillError, error) {
	return nil, nil, &codex.RPCError{Method: "skills/list", Code: -32601, Message: "method not found"}
}

// SetGoal, ThreadGoal and ClearGoal are an app-server's without goals:
// method not found (feature/goal's own tests and the real app-server's
// cover them); it reports no goal updates and runs no turn on its own.
func (c *fakeCodex) SetGoal(context.Context, string, string, int64) (codex.Goal, error) {
	return codex.Goal{}, &codex.RPCError{Method: "thread/goal/set", Code: -32601, Message: "method not found"}
}

func (c *fakeCodex) ThreadGoal(context.Context, string) (codex.Goal, bool, error) {
	return codex.Goal{}, false, &codex.RPCError{Method: "thread/goal/get", Code: -32601, Message: "method not found"}
}

func (c *fakeCodex) ClearGoal(context.Context, string) (bool, error) {
	return false, &codex.RPCError{Method: "thread/goal/clear", Code: -32601, Message: "method not found"}
}

func (c *fakeCodex) OnGoal(func(codex.GoalUpdate))   {}
func (c *fakeCodex) OnAutoTurn(func(codex.AutoTurn)) {}

// Thread names: the harness's threads are named nowhere (feature/names
// is tested alone and through the real app-server).
func (c *fakeCodex) SetThreadName(context.Context, string, string) error { return nil }
func (c *fakeCodex) OnThreadName(func(codex.ThreadName))                 {}
