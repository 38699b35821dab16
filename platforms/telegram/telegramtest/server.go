// Package telegramtest is a fake Telegram Bot API server for tests. It
// speaks what go-telegram/bot sends (multipart/form-data) and what a plain
// client sends (JSON or url-encoded forms), long-polls getUpdates with
// offset/timeout like Telegram, enforces the 4096-unit message limit and
// forum thread rules, validates HTML entities, can inject failures (429 with
// retry_after, "can't parse entities", any error), and records what the bot
// sent, edited, streamed as drafts and showed per chat and topic.
package telegramtest

import (
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/go-telegram/bot/models"
)

// Token is the only token the server accepts.
const Token = "123456:TEST-token"

// Bot is the identity getMe returns.
var Bot = models.User{ID: 123456, IsBot: true, FirstName: "Gateway", Username: "gatewayd_test_bot"}

// MaxUnits is Telegram's text limit in UTF-16 code units.
const MaxUnits = 4096

// Message is one message the bot sent, as Telegram would show it.
type Message struct {
	ChatID    int64
	ThreadID  int    // message_thread_id the bot passed (0 when none)
	ID        int    // message id in the chat
	Text      string // visible text (HTML parsed)
	Raw       string // text as sent
	ParseMode string
	ReplyTo   int    // reply_parameters.message_id
	Markup    string // reply_markup JSON, "" when none
	Edits     int    // successful editMessageText calls
	// Silent: sent with disable_notification (the user was not notified).
	Silent bool
	// Versions are the visible texts the message had, the sent one first
	// and then one per successful edit.
	Versions []string
}

// Action is one sendChatAction call.
type Action struct {
	ChatID   int64
	ThreadID int
	Action   string
}

// Failure is an injected error answer.
type Failure struct {
	Code        int
	Description string
	RetryAfter  int // seconds, for 429
	Skip        int // let this many calls succeed before failing
}

// Server is the fake. Its methods are safe for concurrent use.
type Server struct {
	URL string // pass as the adapter's API URL

	t   testing.TB
	srv *httptest.Server

	mu             sync.Mutex
	changed        chan struct{} // closed and replaced on every state change
	updates        []queued
	nextUpdate     int64
	nextMsg        map[int64]int
	chats          map[int64]models.Chat
	topics         map[int64]map[int]bool
	messages       []*Message
	deleted        []Message // deleteMessage calls that removed a message
	actions        []Action
	answered       []string
	commands       []models.BotCommand
	offsets        []int64
	webhookURL     string
	webhookDeletes int
	failures       map[string][]Failure
	rejectEntities bool
	polling        chan struct{} // closed when a newer getUpdates ends this one
	holds          []*Held
	files          map[string]*fakeFile
	downloads      []string
	uploads        []Upload
	calls          map[string]int // method (lower case) → requests, failed ones too
	created        []CreatedTopic
	edited         []EditedTopic // topics the bot renamed (names.go)
	drafts         []*Draft
	refuseDrafts   bool
}

type queued struct {
	id  int64
	raw json.RawMessage
}

// New starts a server on 127.0.0.1; it is closed when the test ends.
func New(t testing.TB) *Server {
	s := &Server{
		t:          t,
		changed:    make(chan struct{}),
		nextUpdate: 1000,
		nextMsg:    make(map[int64]int),
		chats:      make(map[int64]models.Chat),
		topics:     make(map[int64]map[int]bool),
		failures:   make(map[string][]Failure),
		calls:      make(map[string]int),
	}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	t.Cleanup(s.srv.Close)
	return s
}

// notifyLocked wakes every waiter; s.mu must be held.
func (s *Server) notifyLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// WaitFor blocks until cond is true, re-checking on every state change, and
// fails the test after timeout.
func (s *Server) WaitFor(timeout time.Duration, what string, cond func() bool) {
	s.t.Helper()
	if !s.Await(timeout, cond) {
		s.t.Fatalf("telegramtest: timed out waiting for %s", what)
	}
}

// Await blocks until cond is true, re-checking on every state change, and
// reports whether it held before timeout. Unlike WaitFor it may be called
// from any goroutine, such as a fake model's reply function.
func (s *Server) Await(timeout time.Duration, cond func() bool) bool {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return false
		}
	}
}

// Fail makes the next call of method (case-insensitive) answer f; several
// calls queue several failures.
func (s *Server) Fail(method string, f Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := strings.ToLower(method)
	s.failures[m] = append(s.failures[m], f)
}

// ClearFailures drops the failures still queued for method.
func (s *Server) ClearFailures(method string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.failures, strings.ToLower(method))
}

// Calls counts the requests for method, failed ones included.
func (s *Server) Calls(method string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls[strings.ToLower(method)]
}

// RejectEntities makes every sendMessage/editMessageText with a parse_mode
// fail with "can't parse entities", as Telegram does for markup it dislikes.
func (s *Server) RejectEntities(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rejectEntities = on
}

// SetWebhook pretends a webhook is configured.
func (s *Server) SetWebhook(url string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.webhookURL = url
}

// WebhookDeletes reports how often deleteWebhook was called.
func (s *Server) WebhookDeletes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.webhookDeletes
}

// Chat registers a chat (type, forum flag); updates register theirs too.
func (s *Server) Chat(c models.Chat) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chats[c.ID] = c
}

// Topic registers a forum topic so messages may be sent to it.
func (s *Server) Topic(chat int64, topic int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.topicLocked(chat, topic)
}

func (s *Server) topicLocked(chat int64, topic int) {
	if s.topics[chat] == nil {
		s.topics[chat] = make(map[int]bool)
	}
	s.topics[chat][topic] = true
}

// Queue adds an update (its ID is assigned) and returns the update id.
func (s *Server) Queue(u *models.Update) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nextUpdate++
	u.ID = s.nextUpdate
	if m := u.Message; m != nil {
		s.chats[m.Chat.ID] = m.Chat
		if m.Chat.IsForum && m.IsTopicMessage && m.MessageThreadID != 0 {
			s.topicLocked(m.Chat.ID, m.MessageThreadID)
		}
	}
	raw, err := json.Marshal(u)
	if err != nil {
		s.t.Fatalf("telegramtest: marshal update: %v", err)
	}
	s.updates = append(s.updates, queued{id: u.ID, raw: raw})
	s.notifyLocked()
	return u.ID
}

// Text queues a text message from `from` in chat (in forum topic `topic`
// when topic != 0) and returns the message.
func (s *Server) Text(chat models.Chat, from models.User, topic int, text string, replyTo *models.Message) *models.Message {
	s.mu.Lock()
	s.nextMsg[chat.ID]++
	id := s.nextMsg[chat.ID]
	s.mu.Unlock()
	m := &models.Message{
		ID: id, From: &from, Chat: chat, Date: int(time.Now().Unix()), Text: text,
		MessageThreadID: topic, IsTopicMessage: topic != 0 && chat.IsForum,
		ReplyToMessage: replyTo,
	}
	s.Queue(&models.Update{Message: m})
	return m
}

// Press queues a callback query from `from` on the bot message msg.
func (s *Server) Press(from models.User, msg Message, data string) int64 {
	s.mu.Lock()
	chat := s.chats[msg.ChatID]
	s.mu.Unlock()
	chat.ID = msg.ChatID
	m := &models.Message{
		ID: msg.ID, From: &Bot, Chat: chat, Date: int(time.Now().Unix()), Text: msg.Text,
		MessageThreadID: msg.ThreadID, IsTopicMessage: msg.ThreadID != 0 && chat.IsForum,
	}
	q := &models.CallbackQuery{
		ID: "cq" + strconv.FormatInt(time.Now().UnixNano(), 36), From: from, Data: data,
		Message: models.MaybeInaccessibleMessage{Type: models.MaybeInaccessibleMessageTypeMessage, Message: m},
	}
	return s.Queue(&models.Update{CallbackQuery: q})
}

// Messages returns copies of what the bot sent to chat (any topic when
// thread < 0), in order.
func (s *Server) Messages(chat int64, thread int) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages {
		if m.ChatID == chat && (thread < 0 || m.ThreadID == thread) {
			c := *m
			c.Versions = slices.Clone(m.Versions)
			out = append(out, c)
		}
	}
	return out
}

// Deleted returns the messages the bot deleted, in the order it did.
func (s *Server) Deleted() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.deleted...)
}

// AllMessages returns copies of every message the bot sent, in order.
func (s *Server) AllMessages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Message, 0, len(s.messages))
	for _, m := range s.messages {
		out = append(out, *m)
	}
	return out
}

// Actions returns the chat actions sent so far.
func (s *Server) Actions() []Action {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Action(nil), s.actions...)
}

// Answered returns the answered callback query ids.
func (s *Server) Answered() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.answered...)
}

// Commands returns the commands registered with setMyCommands.
func (s *Server) Commands() []models.BotCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]models.BotCommand(nil), s.commands...)
}

// Offsets returns the offset of every getUpdates call, in order.
func (s *Server) Offsets() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int64(nil), s.offsets...)
}

// Pending reports the updates not yet confirmed by an offset.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/file/") {
		s.serveFile(w, r)
		return
	}
	token, method, ok := strings.Cut(strings.TrimPrefix(r.URL.Path, "/bot"), "/")
	if !ok || token != Token {
		writeFail(w, Failure{Code: 401, Description: "Unauthorized"})
		return
	}
	p, err := params(r)
	if err != nil {
		writeFail(w, Failure{Code: 400, Description: "Bad Request: " + err.Error()})
		return
	}
	method = strings.ToLower(method)
	s.mu.Lock()
	s.calls[method]++
	s.notifyLocked()
	s.mu.Unlock()
	if !s.hold(w, method, p) {
		return
	}
	if f, ok := s.takeFailure(method); ok {
		writeFail(w, f)
		return
	}
	handlers := map[string]func(http.ResponseWriter, *http.Request, map[string]string){
		"getme":               func(w http.ResponseWriter, _ *http.Request, _ map[string]string) { writeOK(w, Bot) },
		"getupdates":          s.getUpdates,
		"getwebhookinfo":      s.getWebhookInfo,
		"deletewebhook":       s.deleteWebhook,
		"setmycommands":       s.setMyCommands,
		"sendmessage":         s.sendMessage,
		"sendmessagedraft":    s.sendMessageDraft,
		"editmessagetext":     s.editMessageText,
		"deletemessage":       s.deleteMessage,
		"sendchataction":      s.sendChatAction,
		"answercallbackquery": s.answerCallbackQuery,
		"getfile":             s.getFile,
		"sendphoto":           s.sendPhoto,
		"senddocument":        s.sendDocument,
		"createforumtopic":    s.createForumTopic,
		"editforumtopic":      s.editForumTopic,
	}
	h, ok := handlers[method]
	if !ok {
		writeFail(w, Failure{Code: 404, Description: "Not Found"})
		return
	}
	h(w, r, p)
}

func (s *Server) takeFailure(method string) (Failure, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	q := s.failures[method]
	if len(q) == 0 {
		return Failure{}, false
	}
	if q[0].Skip > 0 {
		q[0].Skip--
		return Failure{}, false
	}
	s.failures[method] = q[1:]
	return q[0], true
}

// params reads a request's parameters whatever its encoding. Objects and
// arrays stay JSON text, as in Telegram's form encoding.
func params(r *http.Request) (map[string]string, error) {
	out := make(map[string]string)
	mt, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch mt {
	case "multipart/form-data":
		err := r.ParseMultipartForm(1 << 20)
		if errors.Is(err, io.EOF) || (err != nil && strings.Contains(err.Error(), "EOF")) {
			return out, nil // go-telegram/bot sends an empty body for methods without parameters
		}
		if err != nil {
			return nil, err
		}
		for k, v := range r.MultipartForm.Value {
			out[k] = v[0]
		}
	case "application/json":
		var m map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		for k, v := range m {
			var str string
			if json.Unmarshal(v, &str) == nil {
				out[k] = str
			} else {
				out[k] = string(v)
			}
		}
	default:
		if err := r.ParseForm(); err != nil {
			return nil, err
		}
		for k, v := range r.Form {
			out[k] = v[0]
		}
	}
	return out, nil
}

func writeOK(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func writeFail(w http.ResponseWriter, f Failure) {
	body := map[string]any{"ok": false, "error_code": f.Code, "description": f.Description}
	if f.RetryAfter > 0 {
		body["parameters"] = map[string]int{"retry_after": f.RetryAfter}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.Code)
	_ = json.NewEncoder(w).Encode(body)
}

func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }
