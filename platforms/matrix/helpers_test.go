package matrix

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/matrix/matrixtest"
)

const (
	alice = "@alice:fake.test"
	bob   = "@bob:fake.test"
	carol = "@carol:fake.test"
)

// memCursor is an in-memory CursorStore that can be told to fail.
type memCursor struct {
	mu sync.Mutex
	m  map[string]string
}

func newMemCursor() *memCursor { return &memCursor{m: map[string]string{}} }

func (c *memCursor) Cursor(_ context.Context, name string) (string, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[name]
	return v, ok, nil
}

func (c *memCursor) SetCursor(_ context.Context, name, value string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[name] = value
	return nil
}

func (c *memCursor) get(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[name]
}

// sink records deliveries; fail makes the next n Deliver calls fail.
type sink struct {
	mu   sync.Mutex
	got  []gateway.Inbound
	seen map[string]bool
	fail int
	wake chan struct{}
	// hook, when set, sees every Deliver call first; an error fails it.
	hook func(gateway.Inbound) error
}

func newSink() *sink { return &sink{seen: map[string]bool{}, wake: make(chan struct{})} }

func (s *sink) Deliver(_ context.Context, in gateway.Inbound) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hook != nil {
		if err := s.hook(in); err != nil {
			return false, err
		}
	}
	if s.fail > 0 {
		s.fail--
		return false, errors.New("store down")
	}
	key := in.MessageID
	if in.Edited {
		key = "edit:" + in.Text
	}
	if s.seen[key] {
		return true, nil
	}
	s.seen[key] = true
	s.got = append(s.got, in)
	close(s.wake)
	s.wake = make(chan struct{})
	return false, nil
}

func (s *sink) all() []gateway.Inbound {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]gateway.Inbound(nil), s.got...)
}

// waitN waits until at least n inbounds arrived.
func (s *sink) waitN(t *testing.T, n int) []gateway.Inbound {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for {
		s.mu.Lock()
		got, wake := append([]gateway.Inbound(nil), s.got...), s.wake
		s.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-wake:
		case <-ctx.Done():
			t.Fatalf("waited for %d inbounds, got %d: %+v", n, len(got), got)
		}
	}
}

type harness struct {
	srv    *matrixtest.Server
	cursor *memCursor
	sink   *sink
	a      *Adapter
	cancel context.CancelFunc
	done   chan error
}

func testConfig(srv *matrixtest.Server, cursor CursorStore) Config {
	return Config{
		Homeserver: srv.URL, UserID: matrixtest.BotUser, AccessToken: matrixtest.BotToken,
		AllowedUsers: []string{alice, bob}, Cursor: cursor,
		Commands:    []gateway.CommandInfo{{Name: "new"}, {Name: "approve"}, {Name: "deny"}, {Name: "stop"}},
		SyncTimeout: 2 * time.Second, RetryBackoff: 10 * time.Millisecond, syncGrace: 500 * time.Millisecond,
	}
}

// start runs an adapter against srv until the test ends, and waits for Ready.
func start(t *testing.T, srv *matrixtest.Server, cursor *memCursor, snk *sink, edit func(*Config)) *harness {
	t.Helper()
	cfg := testConfig(srv, cursor)
	if edit != nil {
		edit(&cfg)
	}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	h := &harness{srv: srv, cursor: cursor, sink: snk, a: a, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- a.Run(ctx, snk) }()
	t.Cleanup(h.stop)
	select {
	case <-a.Ready():
	case err := <-h.done:
		t.Fatalf("Run ended before Ready: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("adapter not ready")
	}
	return h
}

func (h *harness) stop() {
	h.cancel()
	<-h.done
	h.done <- nil // a second stop returns at once
}

// joinedRoom makes a room with alice (and others) and the bot joined,
// started before the adapter so its history is not delivered.
func joinedRoom(srv *matrixtest.Server, members ...string) string {
	room := srv.CreateRoom(matrixtest.RoomOptions{Creator: alice, Members: members})
	srv.Join(room, matrixtest.BotUser)
	return room
}

func waitFor(t *testing.T, srv *matrixtest.Server, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.WaitFor(ctx, cond); err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
