package telegramtest

import (
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/go-telegram/bot/models"
)

// EditedTopic is a forum topic the bot renamed (editForumTopic).
type EditedTopic struct {
	ChatID int64
	ID     int
	Name   string
}

// editForumTopic renames a topic as Telegram does: a known topic of a
// forum, a name of at most 128 characters (none keeps the name), and the
// forum_topic_edited service message it leaves in the topic, from the bot,
// queued as an update. A refusal (no right to manage topics) is a
// Failure the test sets with Fail.
func (s *Server) editForumTopic(w http.ResponseWriter, _ *http.Request, p map[string]string) {
	chat, _ := strconv.ParseInt(p["chat_id"], 10, 64)
	topic, _ := strconv.Atoi(p["message_thread_id"])
	name := p["name"]
	if utf8.RuneCountInString(name) > 128 {
		writeFail(w, Failure{Code: 400, Description: "Bad Request: TOPIC_NAME_INVALID"})
		return
	}
	s.mu.Lock()
	c, known := s.chats[chat]
	switch {
	case !known:
		s.mu.Unlock()
		writeFail(w, Failure{Code: 400, Description: "Bad Request: chat not found"})
		return
	case !c.IsForum || !s.topics[chat][topic]:
		s.mu.Unlock()
		writeFail(w, Failure{Code: 400, Description: "Bad Request: TOPIC_ID_INVALID"})
		return
	}
	if name != "" {
		s.edited = append(s.edited, EditedTopic{ChatID: chat, ID: topic, Name: name})
	}
	s.mu.Unlock()
	if name != "" {
		bot := Bot
		s.topicEdited(c, bot, topic, name)
	}
	writeOK(w, true)
}

// RenameTopic queues the forum_topic_edited service message of a member
// renaming topic in chat to name.
func (s *Server) RenameTopic(chat models.Chat, from models.User, topic int, name string) {
	s.topicEdited(chat, from, topic, name)
}

func (s *Server) topicEdited(chat models.Chat, from models.User, topic int, name string) {
	s.mu.Lock()
	s.nextMsg[chat.ID]++
	id := s.nextMsg[chat.ID]
	s.mu.Unlock()
	s.Queue(&models.Update{Message: &models.Message{
		ID: id, From: &from, Chat: chat, Date: int(time.Now().Unix()),
		MessageThreadID: topic, IsTopicMessage: true,
		ForumTopicEdited: &models.ForumTopicEdited{Name: name},
	}})
}

// EditedTopics are the topics the bot renamed, in order.
func (s *Server) EditedTopics() []EditedTopic {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]EditedTopic(nil), s.edited...)
}
