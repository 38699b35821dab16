package telegram

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"
	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
)

const waitLimit = 10 * time.Second

var (
	alice   = models.User{ID: 1001, FirstName: "Alice", Username: "alice"}
	mallory = models.User{ID: 6666, FirstName: "Mallory"}
	forum   = models.Chat{ID: -1001, Type: models.ChatTypeSupergroup, IsForum: true, Title: "forum"}
	group   = models.Chat{ID: -2002, Type: models.ChatTypeSupergroup, Title: "group"}
	aliceDM = models.Chat{ID: alice.ID, Type: models.ChatTypePrivate}
	malDM   = models.Chat{ID: mallory.ID, Type: models.ChatTypePrivate}
)

// memCursor is an in-memory CursorStore.
type memCursor struct {
	mu   sync.Mutex
	v    map[string]string
	sets int // SetCursor calls
}

func newMemCursor() *memCursor { return &memCursor{v: make(map[string]string)} }

func (c *memCursor) Cursor(_ context.Context, name string) (string, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.v[name]
	return v, ok, nil
}

func (c *memCursor) SetCursor(_ context.Context, name, value string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.v[name] = value
	c.sets++
	return nil
}

func (c *memCursor) setCalls() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sets
}

func (c *memCursor) get(name string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.v[name]
}

// fakeSink records Deliver calls; fail decides per call whether to fail.
type fakeSink struct {
	mu       sync.Mutex
	attempts []gateway.Inbound
	got      []gateway.Inbound
	changed  chan struct{}
	fail     func(n int) bool // n = attempt number, from 1
}

func newSink() *fakeSink { return &fakeSink{changed: make(chan struct{})} }

var errSinkDown = errors.New("sink down")

func (s *fakeSink) Deliver(ctx context.Context, in gateway.Inbound) (bool, error) {
	s.mu.Lock()
	defer func() {
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
	}()
	s.attempts = append(s.attempts, in)
	if s.fail != nil && s.fail(len(s.attempts)) {
		return false, errSinkDown
	}
	s.got = append(s.got, in)
	return false, nil
}

func (s *fakeSink) delivered() []gateway.Inbound {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]gateway.Inbound(nil), s.got...)
}

func (s *fakeSink) attemptCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.attempts)
}

// waitN blocks until the sink holds n delivered messages.
func (s *fakeSink) waitN(t *testing.T, n int) []gateway.Inbound {
	t.Helper()
	return s.waitUntil(t, "deliveries", func() bool { return len(s.got) >= n }, func() []gateway.Inbound { return s.got })
}

func (s *fakeSink) waitAttempts(t *testing.T, n int) {
	t.Helper()
	s.waitUntil(t, "delivery attempts", func() bool { return len(s.attempts) >= n }, nil)
}

func (s *fakeSink) waitUntil(t *testing.T, what string, cond func() bool, res func() []gateway.Inbound) []gateway.Inbound {
	t.Helper()
	deadline := time.NewTimer(waitLimit)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if cond() {
			var out []gateway.Inbound
			if res != nil {
				out = append(out, res()...)
			}
			s.mu.Unlock()
			return out
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

type harness struct {
	srv    *telegramtest.Server
	cursor *memCursor
}

func newHarness(t *testing.T) *harness {
	return &harness{srv: telegramtest.New(t), cursor: newMemCursor()}
}

func (h *harness) config(t *testing.T) Config {
	return Config{
		Token:        telegramtest.Token,
		APIURL:       h.srv.URL,
		AllowedUsers: []int64{alice.ID},
		Cursor:       h.cursor,
		PollTimeout:  time.Second,
		RetryBackoff: 5 * time.Millisecond,
		Logger:       zaptest.NewLogger(t),
		Commands:     testCommands,
	}
}

// testCommands stand for the gateway's commands: menu ones and one typed
// only.
var testCommands = []gateway.CommandInfo{
	{Name: "new", Description: "Start a fresh Codex thread", Menu: true},
	{Name: "btw", Args: "QUESTION", Description: "Ask a side question"},
	{Name: "status", Description: "Show the conversation's thread", Menu: true},
	{Name: "help", Description: "List commands", Menu: true},
}

// start runs an adapter until the returned stop is called (or the test
// ends) and waits until it is ready.
func (h *harness) start(t *testing.T, cfg Config, sink gateway.Sink) (*Adapter, func()) {
	t.Helper()
	a, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, sink) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(waitLimit):
			t.Errorf("Run did not return after cancel")
		}
	}
	t.Cleanup(stop)
	select {
	case <-a.Ready():
	case err := <-done:
		t.Fatalf("Run ended before ready: %v", err)
	case <-time.After(waitLimit):
		t.Fatalf("adapter not ready")
	}
	return a, stop
}

// startDefault starts an adapter with the default config and a fresh sink.
func (h *harness) startDefault(t *testing.T) (*Adapter, *fakeSink) {
	sink := newSink()
	a, _ := h.start(t, h.config(t), sink)
	return a, sink
}

func botMessage(chat models.Chat, id int) *models.Message {
	return &models.Message{ID: id, From: &telegramtest.Bot, Chat: chat, Text: "earlier reply"}
}
