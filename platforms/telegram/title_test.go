package telegram

import (
	"testing"

	"github.com/go-telegram/bot/models"
)

// Through the wire: a message in a forum topic carries the topic's name
// (its root message, as Telegram sends it under reply_to_message), a group
// message the group's title, a private message none.
func TestInboundCarriesTheChatOrTopicName(t *testing.T) {
	h := newHarness(t)
	sink := newSink()
	h.start(t, h.config(t), sink)
	root := &models.Message{ID: 42, Chat: forum, MessageThreadID: 42, IsTopicMessage: true,
		ForumTopicCreated: &models.ForumTopicCreated{Name: "Release planning"}}
	h.srv.Text(forum, alice, 42, "/x@gatewayd_test_bot in the topic", root)
	h.srv.Text(forum, alice, 43, "/x@gatewayd_test_bot in a topic whose root is not sent", nil)
	h.srv.Text(group, alice, 0, "/x@gatewayd_test_bot in the group", nil)
	h.srv.Text(aliceDM, alice, 0, "in private", nil)
	got := sink.waitN(t, 4)
	for i, want := range []string{"Release planning", "", "group", ""} {
		if got[i].Title != want {
			t.Errorf("delivery %d (%q): Title %q, want %q", i, got[i].Text, got[i].Title, want)
		}
	}
}
