package discord_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/platforms/discord"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
	"github.com/gatewayd/gatewayd/store"
	"go.uber.org/zap/zaptest"
)

const (
	allowed  = "1"
	allowed2 = "2"
	stranger = "666"
	channel  = "10"
	waitFor  = 15 * time.Second
)

// memCursor is an in-memory CursorStore shared across adapter restarts,
// with the store's rules: one row per channel, engaged only turns on, the
// message id and the time seen only grow.
type memCursor struct {
	mu       sync.Mutex
	m        map[string]string
	channels map[string]store.ChannelRecord // by platform + "/" + channel id
}

func newMemCursor() *memCursor {
	return &memCursor{m: map[string]string{}, channels: map[string]store.ChannelRecord{}}
}

func (c *memCursor) Cursor(_ context.Context, name string) (string, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[name]
	return v, ok, nil
}

func (c *memCursor) DeleteCursor(_ context.Context, name string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, name)
	return nil
}

func (c *memCursor) TrackChannel(_ context.Context, platform, channelID string, engaged bool, last int64, seenAt time.Time) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := platform + "/" + channelID
	r, ok := c.channels[key]
	if !ok {
		r = store.ChannelRecord{ChannelID: channelID}
	}
	r.Engaged = r.Engaged || engaged
	r.LastMessageID = max(r.LastMessageID, last)
	if seenAt.After(r.SeenAt) {
		r.SeenAt = seenAt
	}
	c.channels[key] = r
	return nil
}

func (c *memCursor) AdvanceChannel(_ context.Context, platform, channelID string, last int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := platform + "/" + channelID
	if r, ok := c.channels[key]; ok && last > r.LastMessageID {
		r.LastMessageID = last
		c.channels[key] = r
	}
	return nil
}

func (c *memCursor) ForgetChannel(_ context.Context, platform, channelID string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.channels, platform+"/"+channelID)
	return nil
}

func (c *memCursor) Channels(_ context.Context, platform string, limit int) ([]store.ChannelRecord, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []store.ChannelRecord
	for key, r := range c.channels {
		if strings.HasPrefix(key, platform+"/") {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b store.ChannelRecord) int { return b.SeenAt.Compare(a.SeenAt) })
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// rewind moves a channel's cursor back, as a crash before it was saved
// leaves it; the store itself never moves one back.
func (c *memCursor) rewind(channelID, messageID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := discord.PlatformName + "/" + channelID
	r := c.channels[key]
	r.LastMessageID, _ = strconv.ParseInt(messageID, 10, 64)
	c.channels[key] = r
}

// recSink records every delivery, duplicates included, and signals each.
type recSink struct {
	mu  sync.Mutex
	all []gateway.Inbound
	got chan gateway.Inbound
}

func newSink() *recSink { return &recSink{got: make(chan gateway.Inbound, 256)} }

func (s *recSink) Deliver(_ context.Context, in gateway.Inbound) (bool, error) {
	s.mu.Lock()
	s.all = append(s.all, in)
	s.mu.Unlock()
	s.got <- in
	return false, nil
}

func (s *recSink) deliveries() []gateway.Inbound {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]gateway.Inbound(nil), s.all...)
}

// next waits for the next delivery.
func (s *recSink) next(t *testing.T) gateway.Inbound {
	t.Helper()
	select {
	case in := <-s.got:
		return in
	case <-time.After(waitFor):
		t.Fatal("no delivery before the deadline")
		return gateway.Inbound{}
	}
}

// newServer starts the fake; it is closed after the adapters (cleanups run
// last-registered first, and adapters are started later).
func newServer(t *testing.T, channels ...string) *discordtest.Server {
	srv := discordtest.New(channels...)
	t.Cleanup(srv.Close)
	return srv
}

// running is one adapter connected to the fake.
type running struct {
	a    *discord.Adapter
	sink *recSink
	stop func()
}

func baseConfig(t *testing.T, srv *discordtest.Server) discord.Config {
	return discord.Config{
		Token:        discordtest.Token,
		APIURL:       srv.URL(),
		AllowedUsers: []string{allowed, allowed2},
		Cursor:       newMemCursor(),
		Logger:       zaptest.NewLogger(t),
		Commands:     testCommands,
	}
}

// start runs an adapter until stop (or the test's end) and waits for READY.
func start(t *testing.T, cfg discord.Config) *running {
	t.Helper()
	return startWithSink(t, cfg, func(s *recSink) gateway.Sink { return s })
}

// startWithSink is start with the sink the adapter sees built around the
// recording one (which records what gets through).
func startWithSink(t *testing.T, cfg discord.Config, wrap func(*recSink) gateway.Sink) *running {
	t.Helper()
	a, err := discord.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	sink := newSink()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx, wrap(sink)) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case <-a.Ready():
	case err := <-done:
		t.Fatalf("Run ended before ready: %v", err)
	case <-time.After(waitFor):
		t.Fatal("adapter not ready")
	}
	return &running{a: a, sink: sink, stop: stop}
}

// sentinel posts a message from an allowed user in a DM and waits for it:
// the adapter handles events in order, so everything posted before it has
// been handled once it arrives.
func sentinel(t *testing.T, srv *discordtest.Server, r *running) {
	t.Helper()
	if _, ok := srv.Channel("99"); !ok {
		srv.AddDM("99", allowed)
	}
	id := srv.Post(discordtest.Post{ChannelID: "99", AuthorID: allowed, Content: "sentinel"})
	if in := r.sink.next(t); in.MessageID != id {
		t.Fatalf("got delivery %q (%q) before the sentinel", in.MessageID, in.Text)
	}
}
