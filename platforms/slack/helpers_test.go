package slack_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/slack"
	"github.com/gatewayd/gatewayd/platforms/slack/slacktest"
	"github.com/gatewayd/gatewayd/store"
)

const (
	allowed  = "U1"
	allowed2 = "U2"
	stranger = "U666"
	channel  = "C1"
	dm       = "D1"
	waitFor  = 15 * time.Second
)

// memCursor is an in-memory CursorStore with the store's rules: one row
// per lane, engaged only turns on, the cursor and seen time only grow.
type memCursor struct {
	mu   sync.Mutex
	rows map[string]store.ChannelRecord
}

func newMemCursor() *memCursor { return &memCursor{rows: map[string]store.ChannelRecord{}} }

func (c *memCursor) Cursor(context.Context, string) (string, bool, error) { return "", false, nil }
func (c *memCursor) DeleteCursor(context.Context, string) error           { return nil }

func (c *memCursor) TrackChannel(_ context.Context, platform, id string, engaged bool, last int64, seen time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, ok := c.rows[platform+"/"+id]
	if !ok {
		r = store.ChannelRecord{ChannelID: id}
	}
	r.Engaged = r.Engaged || engaged
	r.LastMessageID = max(r.LastMessageID, last)
	if seen.After(r.SeenAt) {
		r.SeenAt = seen
	}
	c.rows[platform+"/"+id] = r
	return nil
}

func (c *memCursor) AdvanceChannel(_ context.Context, platform, id string, last int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if r, ok := c.rows[platform+"/"+id]; ok && last > r.LastMessageID {
		r.LastMessageID = last
		c.rows[platform+"/"+id] = r
	}
	return nil
}

func (c *memCursor) ForgetChannel(_ context.Context, platform, id string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.rows, platform+"/"+id)
	return nil
}

func (c *memCursor) Channels(_ context.Context, platform string, limit int) ([]store.ChannelRecord, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []store.ChannelRecord
	for k, r := range c.rows {
		if strings.HasPrefix(k, platform+"/") {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b store.ChannelRecord) int { return b.SeenAt.Compare(a.SeenAt) })
	return out[:min(len(out), limit)], nil
}

// recSink records every delivery and, like the inbox, reports a message
// id seen before as a duplicate. hold, when set, blocks Deliver until it
// is closed.
type recSink struct {
	mu      sync.Mutex
	all     []gateway.Inbound
	seen    map[string]bool
	got     chan gateway.Inbound
	hold    chan struct{}
	fails   int           // the next fails deliveries answer an error
	changed chan struct{} // closed and replaced on every delivery
}

func newRecSink() *recSink {
	return &recSink{seen: map[string]bool{}, got: make(chan gateway.Inbound, 1000), changed: make(chan struct{})}
}

func (s *recSink) Deliver(ctx context.Context, in gateway.Inbound) (bool, error) {
	s.mu.Lock()
	hold := s.hold
	if s.fails > 0 {
		s.fails--
		s.mu.Unlock()
		return false, errors.New("recsink: failing as asked")
	}
	s.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.all = append(s.all, in)
	dup := s.seen[in.MessageID]
	s.seen[in.MessageID] = true
	s.got <- in
	close(s.changed)
	s.changed = make(chan struct{})
	return dup, nil
}

// waitUntil waits until cond holds, re-checking on every delivery and on
// every change of the fake's state.
func (s *recSink) waitUntil(fake *slacktest.Server, cond func() bool) bool {
	deadline := time.After(waitFor)
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		changed := fake.Changed()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-changed:
		case <-deadline:
			return cond()
		}
	}
}

// unique is how many distinct messages were delivered.
func (s *recSink) unique() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.seen)
}

func (s *recSink) deliveries() []gateway.Inbound {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]gateway.Inbound(nil), s.all...)
}

// next waits for the next delivery that is not ambient.
func (s *recSink) next(t *testing.T) gateway.Inbound {
	t.Helper()
	timeout := time.After(waitFor)
	for {
		select {
		case in := <-s.got:
			if !in.Ambient {
				return in
			}
		case <-timeout:
			t.Fatal("no delivery")
		}
	}
}

// none asserts nothing more is delivered once the fake holds no unacked
// envelope (every envelope was handled).
func (s *recSink) none(t *testing.T, fake *slacktest.Server) {
	t.Helper()
	if !fake.WaitFor(waitFor, func() bool { return fake.Unacked() == 0 }) {
		t.Fatalf("%d envelopes unacked", fake.Unacked())
	}
	select {
	case in := <-s.got:
		t.Fatalf("unexpected delivery %+v", in)
	default:
	}
}

var commands = []gateway.CommandInfo{{Name: "new"}, {Name: "status"}, {Name: "help"}, {Name: "fork"}}

// harness is one adapter running against a fake.
type harness struct {
	fake   *slacktest.Server
	a      *slack.Adapter
	sink   *recSink
	cursor *memCursor
	cancel context.CancelFunc
	done   chan error
}

func newFake(t *testing.T) *slacktest.Server {
	fake := slacktest.New(slacktest.Options{})
	t.Cleanup(fake.Close)
	fake.AddUser(slacktest.User{ID: allowed, Name: "ann", RealName: "Ann A", DisplayName: "annie"})
	fake.AddUser(slacktest.User{ID: allowed2, Name: "bob"})
	return fake
}

func config(fake *slacktest.Server, cursor *memCursor, t *testing.T) slack.Config {
	return slack.Config{
		BotToken: slacktest.BotToken, AppToken: slacktest.AppToken, APIURL: fake.APIURL(),
		AllowedUsers: []string{allowed, allowed2}, Commands: commands, Cursor: cursor,
		Logger: zaptest.NewLogger(t), RetryBackoff: 10 * time.Millisecond, PingInterval: time.Second,
	}
}

// start runs an adapter until the test ends (or stop).
func start(t *testing.T, fake *slacktest.Server, cursor *memCursor, edit ...func(*slack.Config)) *harness {
	t.Helper()
	cfg := config(fake, cursor, t)
	for _, e := range edit {
		e(&cfg)
	}
	a, err := slack.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{fake: fake, a: a, sink: newRecSink(), cursor: cursor, done: make(chan error, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- a.Run(ctx, h.sink) }()
	t.Cleanup(h.stop)
	select {
	case <-a.Ready():
	case err := <-h.done:
		t.Fatalf("Run: %v", err)
	case <-time.After(waitFor):
		t.Fatal("adapter not ready")
	}
	return h
}

func (h *harness) stop() {
	h.cancel()
	<-h.done
	h.done <- nil // a second stop returns at once
}

func lane(ts string) gateway.Address {
	return gateway.Address{Platform: slack.PlatformName, Kind: gateway.LaneThread, ChatID: channel, TopicID: ts}
}
