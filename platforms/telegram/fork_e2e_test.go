package telegram_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/gateway/gatewaytest"
	"github.com/gatewayd/gatewayd/platforms/telegram/telegramtest"
)

// TestEndToEndForkOpensAForumTopic: /fork in a forum topic creates a new
// topic (createForumTopic, named by the title), which is told where it
// came from and whose first model request carries the parent topic's
// context on a thread of its own; /fork in a private chat says it cannot.
func TestEndToEndForkOpensAForumTopic(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	srv, world := telegramtest.New(t), gatewaytest.NewWorld(t)
	forum := models.Chat{ID: -1001, Type: models.ChatTypeSupergroup, IsForum: true}
	alice := models.User{ID: 1001, FirstName: "Alice"}
	srv.Chat(forum)
	srv.Topic(forum.ID, 42)
	waitText := func(chat int64, topic int, want string) {
		t.Helper()
		srv.WaitFor(60*time.Second, want, func() bool {
			for _, m := range srv.Messages(chat, topic) {
				if strings.Contains(m.Text, want) {
					return true
				}
			}
			return false
		})
	}
	stack := startStack(t, ctx, world, srv)
	// The streamed preview shows the answer before its turn ends; /fork
	// then would be told to wait for the answer, not fork.
	waitIdle := func() { t.Helper(); stack.WaitIdle(t, 60*time.Second) }
	srv.Text(forum, alice, 42, "@gatewayd_test_bot remember KIWI", nil)
	waitText(forum.ID, 42, "ECHO")
	waitIdle()
	srv.Text(forum, alice, 42, "/fork@gatewayd_test_bot kiwi experiments", nil)
	waitText(forum.ID, 42, `Forked into "kiwi experiments"`)
	created := srv.CreatedTopics()
	if len(created) != 1 || created[0].ChatID != forum.ID || created[0].Name != "kiwi experiments" {
		t.Fatalf("created topics %+v, want one named by the title in the forum", created)
	}
	topic := created[0].ID
	waitText(forum.ID, topic, "Forked from")

	srv.Text(forum, alice, topic, "@gatewayd_test_bot which fruit in the fork?", nil)
	waitText(forum.ID, topic, "which fruit in the fork?")
	req, ok := world.Model.LastRequestWith("which fruit in the fork?")
	if !ok {
		t.Fatal("no model request from the new topic")
	}
	parent, ok := world.Model.LastRequestWith("remember KIWI")
	if !ok {
		t.Fatal("no model request from the parent topic")
	}
	if !strings.Contains(req.InputText(), "KIWI") {
		t.Error("the fork's first request lacks the parent topic's context")
	}
	if req.ThreadID() == parent.ThreadID() {
		t.Errorf("the fork ran on the parent's thread %s", req.ThreadID())
	}

	dm, _ := aliceDM(srv)
	srv.Text(dm, alice, 0, "hello", nil)
	waitText(dm.ID, 0, "ECHO")
	waitIdle()
	srv.Text(dm, alice, 0, "/fork", nil)
	waitText(dm.ID, 0, "Cannot fork here")
	if n := len(srv.CreatedTopics()); n != 1 {
		t.Errorf("a private chat's /fork created a topic (%d in all)", n)
	}
}
