package telegramtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/go-telegram/bot/models"
)

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, p map[string]string) {
	offset, _ := strconv.ParseInt(p["offset"], 10, 64)
	timeout, _ := strconv.Atoi(p["timeout"])
	// As Telegram does, a new getUpdates ends the one still waiting with
	// 409 (the newer request wins): a poller that lost its lease, or a
	// restarted process, must not hold its successor off.
	terminated := make(chan struct{})
	s.mu.Lock()
	if s.polling != nil {
		close(s.polling)
	}
	s.polling = terminated
	s.offsets = append(s.offsets, offset)
	s.notifyLocked()
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		if s.polling == terminated {
			s.polling = nil
		}
		s.mu.Unlock()
	}()

	deadline := time.NewTimer(time.Duration(timeout) * time.Second)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		s.confirmLocked(offset)
		batch := make([]json.RawMessage, 0, len(s.updates))
		for _, u := range s.updates {
			batch = append(batch, u.raw)
		}
		ch := s.changed
		s.mu.Unlock()
		if len(batch) > 0 || timeout <= 0 {
			writeOK(w, batch)
			return
		}
		select {
		case <-ch:
		case <-deadline.C:
			writeOK(w, batch)
			return
		case <-terminated:
			writeFail(w, Failure{Code: 409, Description: "Conflict: terminated by other getUpdates request"})
			return
		case <-r.Context().Done():
			return
		}
	}
}

// confirmLocked forgets the updates below offset, as Telegram does; a
// negative offset keeps only the last -offset updates, forgetting the
// ones before them.
func (s *Server) confirmLocked(offset int64) {
	if offset < 0 {
		if n := int(-offset); len(s.updates) > n {
			s.updates = append([]queued(nil), s.updates[len(s.updates)-n:]...)
		}
		return
	}
	if offset == 0 {
		return
	}
	kept := s.updates[:0]
	for _, u := range s.updates {
		if u.id >= offset {
			kept = append(kept, u)
		}
	}
	s.updates = kept
}

func (s *Server) getWebhookInfo(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	writeOK(w, models.WebhookInfo{URL: s.webhookURL, PendingUpdateCount: len(s.updates)})
}

func (s *Server) deleteWebhook(w http.ResponseWriter, _ *http.Request, _ map[string]string) {
	s.mu.Lock()
	s.webhookURL = ""
	s.webhookDeletes++
	s.notifyLocked()
	s.mu.Unlock()
	writeOK(w, true)
}

func (s *Server) setMyCommands(w http.ResponseWriter, _ *http.Request, p map[string]string) {
	var cmds []models.BotCommand
	if err := json.Unmarshal([]byte(p["commands"]), &cmds); err != nil {
		writeFail(w, Failure{Code: 400, Description: "Bad Request: can't parse commands JSON"})
		return
	}
	s.mu.Lock()
	s.commands = cmds
	s.notifyLocked()
	s.mu.Unlock()
	writeOK(w, true)
}

func (s *Server) answerCallbackQuery(w http.ResponseWriter, _ *http.Request, p map[string]string) {
	s.mu.Lock()
	s.answered = append(s.answered, p["callback_query_id"])
	s.notifyLocked()
	s.mu.Unlock()
	writeOK(w, true)
}

func (s *Server) sendChatAction(w http.ResponseWriter, _ *http.Request, p map[string]string) {
	chat, _ := strconv.ParseInt(p["chat_id"], 10, 64)
	thread, _ := strconv.Atoi(p["message_thread_id"])
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, bad := s.checkThreadLocked(chat, thread, true); bad {
		writeFail(w, f)
		return
	}
	s.actions = append(s.actions, Action{ChatID: chat, ThreadID: thread, Action: p["action"]})
	s.notifyLocked()
	writeOK(w, true)
}

// checkThreadLocked applies Telegram's thread rules: only forums have
// topics, a topic must exist, and sendMessage must not name General (1).
func (s *Server) checkThreadLocked(chat int64, thread int, action bool) (Failure, bool) {
	if thread == 0 {
		return Failure{}, false
	}
	notFound := Failure{Code: 400, Description: "Bad Request: message thread not found"}
	c, known := s.chats[chat]
	if !known || !c.IsForum {
		return notFound, true
	}
	if thread == 1 {
		return notFound, !action
	}
	return notFound, !s.topics[chat][thread]
}

// visibleText checks the entities of text and returns what the user sees.
func (s *Server) visibleText(text, parseMode string) (string, *Failure) {
	if parseMode != "" && s.rejectEntities {
		return "", &Failure{Code: 400, Description: "Bad Request: can't parse entities: unsupported start tag at byte offset 0"}
	}
	visible := text
	if strings.EqualFold(parseMode, "HTML") {
		v, err := parseHTML(text)
		if err != nil {
			return "", &Failure{Code: 400, Description: "Bad Request: can't parse entities: " + err.Error()}
		}
		visible = v
	}
	switch n := utf16Len(visible); {
	case strings.TrimSpace(visible) == "":
		return "", &Failure{Code: 400, Description: "Bad Request: message text is empty"}
	case n > MaxUnits:
		return "", &Failure{Code: 400, Description: "Bad Request: message is too long"}
	}
	return visible, nil
}

// replyToID is the message id a send's reply_parameters name, 0 for none.
func replyToID(p map[string]string) int {
	var reply struct {
		MessageID int `json:"message_id"`
	}
	if rp := p["reply_parameters"]; rp != "" {
		_ = json.Unmarshal([]byte(rp), &reply) // a malformed value replies to nothing, as Telegram ignores it
	}
	return reply.MessageID
}

// sendTargetLocked checks the chat and topic a send goes to, answering the
// failure Telegram would; s.mu is held.
func (s *Server) sendTargetLocked(w http.ResponseWriter, chat int64, thread int) (models.Chat, bool) {
	if f, bad := s.checkThreadLocked(chat, thread, false); bad {
		writeFail(w, f)
		return models.Chat{}, false
	}
	c, ok := s.chats[chat]
	if !ok {
		writeFail(w, Failure{Code: 400, Description: "Bad Request: chat not found"})
	}
	return c, ok
}

func (s *Server) sendMessage(w http.ResponseWriter, _ *http.Request, p map[string]string) {
	chat, _ := strconv.ParseInt(p["chat_id"], 10, 64)
	thread, _ := strconv.Atoi(p["message_thread_id"])
	visible, f := s.visibleText(p["text"], p["parse_mode"])
	if f != nil {
		writeFail(w, *f)
		return
	}
	replyTo := replyToID(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.sendTargetLocked(w, chat, thread)
	if !ok {
		return
	}
	s.nextMsg[chat]++
	m := &Message{
		ChatID: chat, ThreadID: thread, ID: s.nextMsg[chat], Text: visible, Raw: p["text"],
		ParseMode: p["parse_mode"], ReplyTo: replyTo, Markup: p["reply_markup"],
		Silent: p["disable_notification"] == "true", Versions: []string{visible},
	}
	s.messages = append(s.messages, m)
	s.endDraftsLocked(chat, thread)
	s.notifyLocked()
	writeOK(w, models.Message{
		ID: m.ID, From: &Bot, Chat: c, Date: int(time.Now().Unix()), Text: visible,
		MessageThreadID: thread, IsTopicMessage: thread != 0,
	})
}

func (s *Server) editMessageText(w http.ResponseWriter, _ *http.Request, p map[string]string) {
	chat, _ := strconv.ParseInt(p["chat_id"], 10, 64)
	id, _ := strconv.Atoi(p["message_id"])
	visible, f := s.visibleText(p["text"], p["parse_mode"])
	if f != nil {
		writeFail(w, *f)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var m *Message
	for _, cand := range s.messages {
		if cand.ChatID == chat && cand.ID == id {
			m = cand
		}
	}
	if m == nil {
		writeFail(w, Failure{Code: 400, Description: "Bad Request: message to edit not found"})
		return
	}
	markup := p["reply_markup"]
	if m.Text == visible && (markup == "" || markup == m.Markup) {
		writeFail(w, Failure{Code: 400, Description: "Bad Request: message is not modified: specified new message content and reply markup of the specified message are exactly the same as a current content and reply markup of the message"})
		return
	}
	m.Text, m.Raw, m.ParseMode, m.Edits = visible, p["text"], p["parse_mode"], m.Edits+1
	m.Versions = append(m.Versions, visible)
	if markup != "" {
		m.Markup = markup
	}
	s.notifyLocked()
	writeOK(w, models.Message{ID: m.ID, From: &Bot, Chat: s.chats[chat], Text: visible, Date: int(time.Now().Unix())})
}

// deleteMessage removes a bot message, as Telegram does; Deleted lists it.
func (s *Server) deleteMessage(w http.ResponseWriter, _ *http.Request, p map[string]string) {
	chat, _ := strconv.ParseInt(p["chat_id"], 10, 64)
	id, _ := strconv.Atoi(p["message_id"])
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, m := range s.messages {
		if m.ChatID == chat && m.ID == id {
			s.deleted = append(s.deleted, *m)
			s.messages = append(s.messages[:i], s.messages[i+1:]...)
			s.notifyLocked()
			writeOK(w, true)
			return
		}
	}
	writeFail(w, Failure{Code: 400, Description: "Bad Request: message to delete not found"})
}

var allowedTags = map[string]bool{
	"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true,
	"strike": true, "del": true, "span": true, "tg-spoiler": true, "a": true, "code": true,
	"pre": true, "blockquote": true, "tg-emoji": true,
}

// parseHTML validates Telegram-style HTML (known tags, balanced, only the
// entities Telegram knows) and returns the visible text.
func parseHTML(s string) (string, error) {
	var (
		out   strings.Builder
		stack []string
	)
	for i := 0; i < len(s); {
		switch s[i] {
		case '<':
			j := strings.IndexByte(s[i:], '>')
			if j < 0 {
				return "", fmt.Errorf("unclosed start tag at byte offset %d", i)
			}
			tag := s[i+1 : i+j]
			closing := strings.HasPrefix(tag, "/")
			name := strings.ToLower(strings.Fields(strings.TrimPrefix(tag, "/") + " ")[0])
			if !allowedTags[name] {
				return "", fmt.Errorf("unsupported start tag %q at byte offset %d", name, i)
			}
			if closing {
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return "", fmt.Errorf("unmatched end tag at byte offset %d, expected \"</%s>\"", i, name)
				}
				stack = stack[:len(stack)-1]
			} else {
				stack = append(stack, name)
			}
			i += j + 1
		case '&':
			j := strings.IndexByte(s[i:], ';')
			if j < 0 || j > 10 {
				return "", fmt.Errorf("unclosed entity at byte offset %d", i)
			}
			r, ok := entity(s[i+1 : i+j])
			if !ok {
				return "", fmt.Errorf("unsupported entity at byte offset %d", i)
			}
			out.WriteString(r)
			i += j + 1
		default:
			out.WriteByte(s[i])
			i++
		}
	}
	if len(stack) > 0 {
		return "", fmt.Errorf("can't find end tag corresponding to start tag %q", stack[len(stack)-1])
	}
	return out.String(), nil
}

func entity(name string) (string, bool) {
	switch name {
	case "lt":
		return "<", true
	case "gt":
		return ">", true
	case "amp":
		return "&", true
	case "quot":
		return "\"", true
	}
	if strings.HasPrefix(name, "#") {
		n, err := strconv.Atoi(strings.TrimPrefix(name, "#"))
		if err == nil && n > 0 {
			return string(rune(n)), true
		}
	}
	return "", false
}

// CreatedTopic is a forum topic the bot created (createForumTopic).
type CreatedTopic struct {
	ChatID int64
	ID     int
	Name   string
}

// createForumTopic creates a topic in a forum, as Telegram does: the
// topic's id is the id of the service message that opens it, and a chat
// that is not a forum is refused.
func (s *Server) createForumTopic(w http.ResponseWriter, _ *http.Request, p map[string]string) {
	chat, _ := strconv.ParseInt(p["chat_id"], 10, 64)
	name := p["name"]
	switch n := utf8.RuneCountInString(name); {
	case n == 0:
		writeFail(w, Failure{Code: 400, Description: "Bad Request: TOPIC_NAME_EMPTY"})
		return
	case n > 128:
		writeFail(w, Failure{Code: 400, Description: "Bad Request: TOPIC_NAME_INVALID"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, known := s.chats[chat]
	if !known {
		writeFail(w, Failure{Code: 400, Description: "Bad Request: chat not found"})
		return
	}
	if !c.IsForum {
		writeFail(w, Failure{Code: 400, Description: "Bad Request: the chat is not a forum"})
		return
	}
	s.nextMsg[chat]++
	id := s.nextMsg[chat]
	s.topicLocked(chat, id)
	s.created = append(s.created, CreatedTopic{ChatID: chat, ID: id, Name: name})
	s.notifyLocked()
	writeOK(w, models.ForumTopic{MessageThreadID: id, Name: name, IconColor: 7322096})
}

// CreatedTopics are the topics the bot created, in order.
func (s *Server) CreatedTopics() []CreatedTopic {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CreatedTopic(nil), s.created...)
}
