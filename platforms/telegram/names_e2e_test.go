package telegram_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
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

// waitNames waits until thread's names heard are as many as want, then
// checks they are want.
func (h *heardNames) waitNames(t *testing.T, ctx context.Context, thread string, want ...string) {
	t.Helper()
	for {
		h.mu.Lock()
		got, changed := append([]string(nil), h.names[thread]...), h.changed
		h.mu.Unlock()
		if len(got) >= len(want) {
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("names heard %q, want %q", got, want)
			}
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("names heard %q, want %q: %v", got, want, ctx.Err())
		}
	}
}

// TestEndToEndNamesBothWays: a forum topic renamed by an allowed member
// names its lane's Codex thread on the real app-server (a stranger's
// rename does not); the thread renamed by another client renames the
// topic (editForumTopic), whose service message from the bot does not
// bounce back. A private chat's thread renamed renames nothing.
func TestEndToEndNamesBothWays(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	forum := models.Chat{ID: -1001, Type: models.ChatTypeSupergroup, IsForum: true}
	dm, alice := aliceDM(srv)
	mallory := models.User{ID: 6666, FirstName: "Mallory"}
	srv.Chat(forum)
	srv.Topic(forum.ID, 42)
	stack := startStack(t, ctx, world, srv)
	heard := hearNames(stack.Codex)
	threadOf := func(chat models.Chat, topic int, addr gateway.Address, text string) string {
		t.Helper()
		srv.Text(chat, alice, topic, text, nil)
		srv.WaitFor(60*time.Second, "an answer", func() bool {
			for _, m := range srv.Messages(chat.ID, topic) {
				if strings.Contains(m.Text, "ECHO") {
					return true
				}
			}
			return false
		})
		stack.WaitIdle(t, 60*time.Second)
		sl, err := stack.Store.Lane(ctx, addr.SessionKey())
		if err != nil || sl.ThreadID == "" {
			t.Fatalf("lane %s: %+v, %v", addr.SessionKey(), sl, err)
		}
		return sl.ThreadID
	}
	lane := gateway.Address{Platform: "telegram", Kind: gateway.LaneTopic, ChatID: "-1001", TopicID: "42"}
	thread := threadOf(forum, 42, lane, "@gatewayd_test_bot hello in the topic")

	srv.RenameTopic(forum, mallory, 42, "A stranger's name")
	srv.RenameTopic(forum, alice, 42, "Renamed in Telegram")
	heard.waitNames(t, ctx, thread, "Renamed in Telegram")

	// Another client of the app-server renames the thread.
	if err := stack.Codex.SetThreadName(ctx, thread, "Named in the IDE"); err != nil {
		t.Fatalf("SetThreadName: %v", err)
	}
	srv.WaitFor(30*time.Second, "the topic renamed", func() bool { return len(srv.EditedTopics()) > 0 })
	// The bot's forum_topic_edited is queued before this rename: had it
	// bounced back, it would be the next name heard.
	srv.RenameTopic(forum, alice, 42, "Final")
	heard.waitNames(t, ctx, thread, "Renamed in Telegram", "Named in the IDE", "Final")
	want := []telegramtest.EditedTopic{{ChatID: forum.ID, ID: 42, Name: "Named in the IDE"}}

	dmThread := threadOf(dm, 0, gateway.Address{Platform: "telegram", Kind: gateway.LaneDM, ChatID: "1001"}, "hello in private")
	if err := stack.Codex.SetThreadName(ctx, dmThread, "Not for a DM"); err != nil {
		t.Fatalf("SetThreadName: %v", err)
	}
	// Ordered after the DM's update on the feature's queue.
	if err := stack.Codex.SetThreadName(ctx, thread, "After the DM"); err != nil {
		t.Fatalf("SetThreadName: %v", err)
	}
	want = append(want, telegramtest.EditedTopic{ChatID: forum.ID, ID: 42, Name: "After the DM"})
	srv.WaitFor(30*time.Second, "the second rename", func() bool { return len(srv.EditedTopics()) >= 2 })
	if got := srv.EditedTopics(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("topics renamed %+v, want %+v", got, want)
	}
}
