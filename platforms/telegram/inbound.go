package telegram

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// generalTopic is the id of a forum's General topic. Messages in it carry no
// message_thread_id, but the lane needs a stable topic id.
const generalTopic = "1"

// handleUpdate turns one update into at most one Deliver call. It returns an
// error only when Deliver failed, i.e. the update must not be confirmed.
func (a *Adapter) handleUpdate(ctx context.Context, sink gateway.Sink, u *models.Update) error {
	switch {
	case u.Message != nil && u.Message.ForumTopicEdited != nil:
		return a.handleTopicEdited(ctx, sink, u.Message)
	case u.Message != nil:
		in, ok := a.inboundFromMessage(u.Message)
		if !ok {
			return nil
		}
		return a.deliver(ctx, sink, in)
	case u.EditedMessage != nil:
		// An edit: the gateway replaces a waiting message's text or steers
		// it into the running turn. Edits of the room's talk are not kept.
		in, ok := a.inboundFromMessage(u.EditedMessage)
		if !ok || in.Ambient {
			return nil
		}
		in.Edited, in.Attachments = true, nil
		return a.deliver(ctx, sink, in)
	case u.CallbackQuery != nil:
		return a.handleCallback(ctx, sink, u.CallbackQuery)
	}
	return nil
}

// deliver hands an addressed inbound to the gateway if its sender is allowed.
// Nothing of an unauthorised sender leaves the adapter.
func (a *Adapter) deliver(ctx context.Context, sink gateway.Sink, in gateway.Inbound) error {
	if !a.Authorize(in) {
		if !in.Ambient { // a stranger's talk to the room is not a refusal worth a line
			a.noteUnauthorised(in)
		}
		return nil
	}
	dup, err := sink.Deliver(ctx, in)
	if err != nil {
		return fmt.Errorf("telegram: deliver %s: %w", in.MessageID, err)
	}
	if dup {
		a.log.Info("telegram: redelivered update recognised as a duplicate", zap.String("message_id", in.MessageID))
	}
	return nil
}

func (a *Adapter) noteUnauthorised(in gateway.Inbound) {
	if a.unauth.shouldLog(in.SenderID) {
		a.log.Warn("telegram: ignoring message from a sender not on the allowlist",
			zap.String("sender_id", in.SenderID), zap.String("chat_id", in.Address.ChatID))
	}
}

// inboundFromMessage builds the inbound for m, or reports false when the
// message is not for us (no text, from a bot, a group message not addressed
// to the bot, a channel post).
func (a *Adapter) inboundFromMessage(m *models.Message) (gateway.Inbound, bool) {
	if m.From == nil || m.From.IsBot {
		return gateway.Inbound{}, false
	}
	text := m.Text
	if text == "" {
		text = m.Caption
	}
	files := a.attachmentsOf(m)
	if strings.TrimSpace(text) == "" && len(files) == 0 {
		return gateway.Inbound{}, false
	}
	addr, ok := addressOf(m.Chat, m.MessageThreadID, m.IsTopicMessage)
	if !ok {
		return gateway.Inbound{}, false
	}
	mentioned, text, ok := a.addressed(m, text)
	if !ok {
		return gateway.Inbound{}, false
	}
	if addr.Kind == gateway.LaneDM {
		mentioned = true
	}
	// Not addressed in a group: the room's talk, kept as context for the
	// bot's next turn there (the gateway decides, lanes.group_context).
	ambient := !mentioned && !a.isFree(addr)
	if ambient && strings.TrimSpace(text) == "" {
		return gateway.Inbound{}, false // files said to the room are not kept
	}
	in := gateway.Inbound{
		Address:    addr,
		MessageID:  messageID(m.Chat.ID, m.ID),
		SenderID:   strconv.FormatInt(m.From.ID, 10),
		SenderName: senderName(m.From),
		Text:       text,
		Mentioned:  mentioned,
		ReceivedAt: a.now(),
		// A caption that is only the mention leaves no text: the files are
		// the message.
		Attachments: files,
		Title:       titleOf(m),
	}
	if r := m.ReplyToMessage; r != nil && !isTopicRoot(m, r) {
		in.ReplyTo = messageID(m.Chat.ID, r.ID)
		in.Quote = quoteOf(r)
	}
	in.DisplayName = displayName(m.From)
	if ambient {
		in.Ambient, in.Attachments, in.Quote = true, nil, nil
	}
	return in, true
}

// addressOf maps a chat (and thread) to a lane. A thread id makes a lane only
// in a forum; in ordinary groups it is a reply thread and must not split the
// conversation.
func addressOf(chat models.Chat, threadID int, isTopicMessage bool) (gateway.Address, bool) {
	addr := gateway.Address{Platform: PlatformName, ChatID: strconv.FormatInt(chat.ID, 10)}
	switch chat.Type {
	case models.ChatTypePrivate:
		addr.Kind = gateway.LaneDM
	case models.ChatTypeGroup, models.ChatTypeSupergroup:
		addr.Kind = gateway.LaneGroup
		if chat.IsForum {
			addr.Kind = gateway.LaneTopic
			addr.TopicID = generalTopic
			if isTopicMessage && threadID != 0 {
				addr.TopicID = strconv.Itoa(threadID)
			}
		}
	default:
		return addr, false
	}
	return addr, true
}

// isTopicRoot reports whether r is the service message that created m's
// forum topic: Telegram sets it as reply_to_message of every topic message.
// titleOf is the name of the message's lane when the update carries it:
// the forum topic's (its root, the forum_topic_created service message,
// comes as reply_to_message), else the group's. A private chat has none.
func titleOf(m *models.Message) string {
	if r := m.ReplyToMessage; r != nil && isTopicRoot(m, r) && r.ForumTopicCreated != nil {
		return r.ForumTopicCreated.Name
	}
	if m.IsTopicMessage {
		return "" // the group's name would name every topic alike
	}
	return m.Chat.Title
}

func isTopicRoot(m, r *models.Message) bool {
	return m.IsTopicMessage && r.ID == m.MessageThreadID
}

// addressed decides whether a group message is meant for the bot: a
// /command (bare or /cmd@thisbot), an @mention, or a reply to the bot. It
// returns the text with the bot's name removed from a command, and false
// when the message is a command for another bot.
func (a *Adapter) addressed(m *models.Message, text string) (bool, string, bool) {
	botID, username := a.identity()
	if strings.HasPrefix(text, "/") {
		end := strings.IndexFunc(text, unicode.IsSpace)
		if end < 0 {
			end = len(text)
		}
		name, target, hasTarget := strings.Cut(text[:end], "@")
		if !hasTarget {
			return true, text, true
		}
		if username == "" || !strings.EqualFold(target, username) {
			return false, text, false
		}
		return true, name + text[end:], true
	}
	if username != "" && mentions(text, username) {
		return true, stripLeadingMention(text, username), true
	}
	if r := m.ReplyToMessage; r != nil && r.From != nil && r.From.ID == botID && !isTopicRoot(m, r) {
		return true, text, true
	}
	return false, text, true
}

// mentions reports whether text contains @username as a whole word.
func mentions(text, username string) bool {
	lower, needle := strings.ToLower(text), "@"+strings.ToLower(username)
	for i := 0; ; {
		j := strings.Index(lower[i:], needle)
		if j < 0 {
			return false
		}
		end := i + j + len(needle)
		if end == len(lower) || !isNameByte(lower[end]) {
			return true
		}
		i = end
	}
}

func isNameByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
}

func stripLeadingMention(text, username string) string {
	prefix := "@" + username
	if len(text) >= len(prefix) && strings.EqualFold(text[:len(prefix)], prefix) {
		if rest := strings.TrimLeft(text[len(prefix):], " ,:"); rest != "" {
			return rest
		}
	}
	return text
}

func (a *Adapter) isFree(addr gateway.Address) bool {
	return a.free[addr.ChatID] || (addr.TopicID != "" && a.free[addr.ChatID+":"+addr.TopicID])
}

// handleCallback delivers a button press from an allowed user and always
// answers the query so the client stops its spinner.
func (a *Adapter) handleCallback(ctx context.Context, sink gateway.Sink, q *models.CallbackQuery) error {
	in, ok := a.inboundFromCallback(q)
	if ok {
		if err := a.deliver(ctx, sink, in); err != nil {
			return err // answered when the redelivered query succeeds
		}
	}
	actx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if _, err := a.bot.AnswerCallbackQuery(actx, &bot.AnswerCallbackQueryParams{CallbackQueryID: q.ID}); err != nil {
		a.log.Debug("telegram: answerCallbackQuery failed", zap.Error(err))
	}
	return nil
}

func (a *Adapter) inboundFromCallback(q *models.CallbackQuery) (gateway.Inbound, bool) {
	if q.Data == "" || q.From.IsBot {
		return gateway.Inbound{}, false
	}
	var (
		addr  gateway.Address
		ok    bool
		msgID int
		chat  int64
	)
	switch {
	case q.Message.Message != nil:
		m := q.Message.Message
		addr, ok = addressOf(m.Chat, m.MessageThreadID, m.IsTopicMessage)
		msgID, chat = m.ID, m.Chat.ID
	case q.Message.InaccessibleMessage != nil:
		m := q.Message.InaccessibleMessage
		addr, ok = addressOf(m.Chat, 0, false)
		msgID, chat = m.MessageID, m.Chat.ID
	}
	if !ok {
		return gateway.Inbound{}, false
	}
	return gateway.Inbound{
		Address:    addr,
		MessageID:  "callback:" + q.ID,
		SenderID:   strconv.FormatInt(q.From.ID, 10),
		SenderName: senderName(&q.From),
		ReplyTo:    messageID(chat, msgID),
		Mentioned:  true,
		ReceivedAt: a.now(),
		Callback:   q.Data,
	}, true
}

func messageID(chat int64, id int) string {
	return strconv.FormatInt(chat, 10) + ":" + strconv.Itoa(id)
}

// displayName is the name Telegram shows for u: first and last name.
func displayName(u *models.User) string {
	if name := strings.TrimSpace(u.FirstName + " " + u.LastName); name != "" {
		return name
	}
	return u.Username
}

// quoteOf is the replied-to message r, nil when it has neither text nor
// caption (a sticker, a photo without one).
func quoteOf(r *models.Message) *gateway.Quote {
	text := r.Text
	if text == "" {
		text = r.Caption
	}
	if strings.TrimSpace(text) == "" {
		return nil
	}
	q := &gateway.Quote{Text: text}
	if r.From != nil {
		q.Author, q.FromBot = displayName(r.From), r.From.IsBot
	}
	return q
}

func senderName(u *models.User) string {
	if u.Username != "" {
		return u.Username
	}
	return strings.TrimSpace(u.FirstName + " " + u.LastName)
}

// unauthLog rate-limits the "not on the allowlist" log line per sender.
type unauthLog struct {
	now  func() time.Time
	mu   sync.Mutex
	last map[string]time.Time
}

const (
	unauthLogEvery = 10 * time.Minute
	unauthLogMax   = 1024
)

func newUnauthLog(now func() time.Time) *unauthLog {
	return &unauthLog{now: now, last: make(map[string]time.Time)}
}

func (u *unauthLog) shouldLog(sender string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	now := u.now()
	if t, ok := u.last[sender]; ok && now.Sub(t) < unauthLogEvery {
		return false
	}
	if len(u.last) >= unauthLogMax {
		clear(u.last) // bounded memory; at worst one extra log line per sender
	}
	u.last[sender] = now
	return true
}
