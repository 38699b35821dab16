package ext

import (
	"context"
	"errors"
	"sync"

	"github.com/gatewayd/gatewayd/store"
)

// Serial hands values to a function one at a time, in the order they were
// pushed, without making the pusher wait: for hooks called on codex's
// reader (OnGoal, OnThreadName, ...), which must not block it.
type Serial[T any] struct {
	handle func(T)
	// Spawn runs the drain: a goroutine, or at once in tests that look
	// right after a push.
	Spawn func(func())

	mu   sync.Mutex
	q    []T
	busy bool // a drain runs
}

// NewSerial hands every pushed value to handle, in order.
func NewSerial[T any](handle func(T)) *Serial[T] {
	return &Serial[T]{handle: handle, Spawn: func(f func()) { go f() }}
}

// Push queues v; the drain started by the first push of a batch takes it.
func (s *Serial[T]) Push(v T) {
	s.mu.Lock()
	s.q = append(s.q, v)
	if s.busy {
		s.mu.Unlock()
		return
	}
	s.busy = true
	s.mu.Unlock()
	s.Spawn(s.drain)
}

func (s *Serial[T]) drain() {
	for {
		s.mu.Lock()
		if len(s.q) == 0 {
			s.busy = false
			s.mu.Unlock()
			return
		}
		v := s.q[0]
		s.q = s.q[1:]
		s.mu.Unlock()
		s.handle(v)
	}
}

// LaneReader reads a lane's row (the store).
type LaneReader interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
}

// LoadedThread is the lane's thread when the app-server has it loaded for
// this lane, "" otherwise (no thread, a lost binding, not loaded, or
// loaded for another lane). err is a failed read of the lane's row; a
// lane never seen is not an error.
func LoadedThread(ctx context.Context, h Host, st LaneReader, l Lane) (string, error) {
	sl, err := st.Lane(ctx, l.Key())
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	if sl.ThreadID == "" || sl.Binding == store.BindingLost {
		return "", nil
	}
	if owner, ok := h.LaneOfThread(sl.ThreadID); !ok || owner.Key() != l.Key() {
		return "", nil
	}
	return sl.ThreadID, nil
}

type statusAskerKey struct{}

// WithStatusAsker marks ctx as /status asked by sender (a platform user
// id), so status hooks can add what is theirs.
func WithStatusAsker(ctx context.Context, sender string) context.Context {
	return context.WithValue(ctx, statusAskerKey{}, sender)
}

// StatusAsker is who asked for /status ("" when not known).
func StatusAsker(ctx context.Context) string {
	s, _ := ctx.Value(statusAskerKey{}).(string)
	return s
}
