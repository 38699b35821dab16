package discord_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/discord/discordtest"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// heardNames records the thread/name/updated notifications the real
// app-server sends the gateway's client: every thread/name/set the
// gateway makes is answered by one.
type heardNames struct {
	mu      sync.Mutex
	names   map[string][]string
	changed chan struct{} // closed and replaced when a name is heard
}

func hearNames(c *codex.Client) *heardNames {
	h := &heardNames{names: map[string][]string{}, changed: make(chan struct{})}
	c.OnThreadName(func(u codex.ThreadName) {
		h.mu.Lock()
		h.names[u.ThreadID] = append(h.names[u.ThreadID], u.Name)
		close(h.changed)
		h.changed = make(chan struct{})
		h.mu.Unlock()
	})
	return h
}

// wait waits until thread's names heard are at least n, or ctx ends.
func (h *heardNames) wait(ctx context.Context, thread string, n int) bool {
	for {
		h.mu.Lock()
		got, changed := len(h.names[thread]), h.changed
		h.mu.Unlock()
		if got >= n {
			return true
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return false
		}
	}
}

func (h *heardNames) of(thread string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.names[thread]...)
}

// TestEndToEndNamesBothWays: a Discord thread renamed in the chat names
// its lane's Codex thread on the real app-server; the thread renamed by
// another client renames the Discord thread; neither rename's echo bounces
// back, and an update that renames nothing names nothing. A DM's thread
// renamed renames nothing in Discord.
func TestEndToEndNamesBothWays(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer cancel()
	srv, world := newServer(t, channel), gatewaytest.NewWorld(t)
	srv.AddThread("11", channel, "5")
	srv.AddDM("99", allowed)
	stack := startStack(t, ctx, world, srv)
	heard := hearNames(stack.Codex)
	threadOf := func(addr gateway.Address, say string) string {
		t.Helper()
		where := addr.TopicID
		if where == "" {
			where = addr.ChatID
		}
		srv.Post(discordtest.Post{ChannelID: where, AuthorID: allowed, Content: say, MentionBot: true})
		if !srv.WaitFor(60*time.Second, func() bool { return hasBotText(srv, where, "ECHO:") }) {
			t.Fatalf("no answer in %s", where)
		}
		stack.WaitIdle(t, 60*time.Second)
		sl, err := stack.Store.Lane(ctx, addr.SessionKey())
		if err != nil || sl.ThreadID == "" {
			t.Fatalf("lane %s: %+v, %v", addr.SessionKey(), sl, err)
		}
		return sl.ThreadID
	}
	waitNames := func(thread string, want ...string) {
		t.Helper()
		if !heard.wait(ctx, thread, len(want)) {
			t.Fatalf("names heard %q, want %q", heard.of(thread), want)
		}
		if got := heard.of(thread); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("names heard %q, want %q", got, want)
		}
	}
	lane := gateway.Address{Platform: "discord", Kind: gateway.LaneThread, ChatID: channel, TopicID: "11"}
	thread := threadOf(lane, "hello in the thread")

	srv.RenameThread("11", "Renamed in Discord")
	waitNames(thread, "Renamed in Discord")

	// Another client of the app-server renames the thread.
	if err := stack.Codex.SetThreadName(ctx, thread, "Named in the IDE"); err != nil {
		t.Fatalf("SetThreadName: %v", err)
	}
	if !srv.WaitFor(30*time.Second, func() bool { return len(srv.Renames()) > 0 }) {
		t.Fatal("the Discord thread was not renamed")
	}
	if ch, _ := srv.Channel("11"); ch.Name != "Named in the IDE" {
		t.Errorf("thread named %q, want the IDE's name", ch.Name)
	}
	// Its THREAD_UPDATE echo, then an update that renames nothing: if
	// either named the Codex thread, the chat's next rename would not be
	// the next name heard.
	srv.UpdateThread("11")
	srv.RenameThread("11", "Final")
	waitNames(thread, "Renamed in Discord", "Named in the IDE", "Final")
	if got := srv.Renames(); len(got) != 1 {
		t.Errorf("Discord renames %+v, want the IDE's only: an echo bounced back", got)
	}

	dmThread := threadOf(gateway.Address{Platform: "discord", Kind: gateway.LaneDM, ChatID: "99"}, "hello in a DM")
	if err := stack.Codex.SetThreadName(ctx, dmThread, "Not for a DM"); err != nil {
		t.Fatalf("SetThreadName: %v", err)
	}
	// Ordered after the DM's update on the feature's queue: its rename.
	if err := stack.Codex.SetThreadName(ctx, thread, "After the DM"); err != nil {
		t.Fatalf("SetThreadName: %v", err)
	}
	if !srv.WaitFor(30*time.Second, func() bool { return len(srv.Renames()) == 2 }) {
		t.Fatalf("Discord renames %+v, want the thread's second", srv.Renames())
	}
	for _, r := range srv.Renames() {
		if r.ThreadID != "11" {
			t.Errorf("renamed %+v, want only thread 11", r)
		}
	}
}

func hasBotText(srv *discordtest.Server, channelID, want string) bool {
	for _, m := range srv.BotMessages(channelID) {
		if strings.Contains(m.Content, want) {
			return true
		}
	}
	return false
}
