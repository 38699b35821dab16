package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// maxCallbackData is Telegram's limit for callback_data, in bytes.
const maxCallbackData = 64

// target is where a lane's messages go.
type target struct {
	chat       int64
	sendThread int // message_thread_id for sendMessage; 0 for the General topic
	typeThread int // message_thread_id for sendChatAction; 1 for General
}

func targetOf(addr gateway.Address) (target, error) {
	if addr.Platform != PlatformName {
		return target{}, fmt.Errorf("telegram: address of platform %q: %w", addr.Platform, gateway.ErrPermanent)
	}
	chat, err := strconv.ParseInt(addr.ChatID, 10, 64)
	if err != nil {
		return target{}, fmt.Errorf("telegram: chat id %q: %w", addr.ChatID, gateway.ErrPermanent)
	}
	t := target{chat: chat}
	if addr.Kind == gateway.LaneTopic && addr.TopicID != "" {
		topic, err := strconv.Atoi(addr.TopicID)
		if err != nil {
			return target{}, fmt.Errorf("telegram: topic id %q: %w", addr.TopicID, gateway.ErrPermanent)
		}
		t.typeThread = topic
		if addr.TopicID != generalTopic {
			// The General topic rejects an explicit thread id for messages.
			t.sendThread = topic
		}
	}
	return t, nil
}

// parseMessageID accepts "<chat>:<id>" (what Send returns) or a bare id;
// a draft's preview id names no message.
func parseMessageID(id string) (int, bool) {
	if isDraftID(id) {
		return 0, false
	}
	if i := strings.LastIndexByte(id, ':'); i >= 0 {
		id = id[i+1:]
	}
	n, err := strconv.Atoi(id)
	return n, err == nil && n > 0
}

// Send implements gateway.Platform. A reply longer than 4096 UTF-16 units
// goes out as several messages in order. Each chunk is recorded through
// out.Parts as soon as Telegram accepted it, and a retry of the outbox row
// (in this process or the next) skips the chunks in out.SentParts, so none
// is sent twice. Telegram has no idempotency key: a chunk whose answer was
// lost is the one that may be sent again.
func (a *Adapter) Send(ctx context.Context, out gateway.Outbound) (string, error) {
	return a.send(ctx, out, nil)
}

// SendButtons implements gateway.ButtonSender with an inline keyboard on the
// last chunk. A press arrives as an Inbound with Callback set.
func (a *Adapter) SendButtons(ctx context.Context, out gateway.Outbound, buttons []gateway.Button) (string, error) {
	kb, err := keyboard(buttons)
	if err != nil {
		return "", err
	}
	return a.send(ctx, out, kb)
}

// keyboard lays buttons out three to a row, or one to a row when a label
// is too long to read in a third of the width. No buttons is an empty
// keyboard: an edit with it takes the message's buttons away.
func keyboard(buttons []gateway.Button) (*models.InlineKeyboardMarkup, error) {
	perRow := 3
	for _, b := range buttons {
		if utf8.RuneCountInString(b.Label) > shortLabel {
			perRow = 1
		}
	}
	kb := &models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{}}
	for i, b := range buttons {
		if b.ID == "" || len(b.ID) > maxCallbackData {
			return nil, fmt.Errorf("telegram: button id must be 1..%d bytes, got %d: %w", maxCallbackData, len(b.ID), gateway.ErrPermanent)
		}
		if i%perRow == 0 {
			kb.InlineKeyboard = append(kb.InlineKeyboard, nil)
		}
		row := len(kb.InlineKeyboard) - 1
		kb.InlineKeyboard[row] = append(kb.InlineKeyboard[row], models.InlineKeyboardButton{Text: b.Label, CallbackData: b.ID})
	}
	return kb, nil
}

// shortLabel is the longest label that still reads three to a row.
const shortLabel = 12

func (a *Adapter) send(ctx context.Context, out gateway.Outbound, kb *models.InlineKeyboardMarkup) (string, error) {
	t, err := targetOf(out.Address)
	if err != nil {
		return "", err
	}
	chunks := SplitMessage(out.Text, MaxMessageUnits)
	if len(chunks) == 0 {
		return "", fmt.Errorf("telegram: empty message for %s: %w", out.Address.SessionKey(), gateway.ErrPermanent)
	}
	if out.Kind == gateway.OutPreview || out.Kind == gateway.OutProgress {
		// A preview (or a turn's status message) is one message that later
		// edits replace (Edit also shows the first chunk); the final reply,
		// sent with EditID, splits fully.
		chunks = chunks[:1]
	}
	if a.draftable(out, t) {
		pid, ok, err := a.startDraft(ctx, t, out, chunks[0])
		if ok || err != nil {
			return pid, err
		}
	}
	sent := out.SentParts
	for i := len(sent); i < len(chunks); i++ {
		var markup models.ReplyMarkup
		if i == len(chunks)-1 && kb != nil {
			markup = kb
		}
		id, err := a.sendOrEditChunk(ctx, t, out, i, chunks[i], markup)
		if err != nil {
			return "", a.classify(err, out.Address)
		}
		pid := messageID(t.chat, id)
		if err := recordChunk(ctx, out, i, len(chunks), pid); err != nil {
			return "", fmt.Errorf("telegram: record chunk %d of outbox %d: %w", i, out.ID, err)
		}
		sent = append(sent, pid)
	}
	if isDraftID(out.EditID) {
		a.drafts.forget(out.EditID) // replaced by the reply
	}
	return sent[len(sent)-1], nil
}

// recordChunk records chunk i of n once Telegram accepted it. The last is
// returned by Send, and the outbox may record it with the sent mark.
func recordChunk(ctx context.Context, out gateway.Outbound, i, n int, pid string) error {
	if i == n-1 {
		return out.RecordLastPart(ctx, i, pid)
	}
	return out.RecordPart(ctx, i, pid)
}

// sendOrEditChunk sends chunk i; the first chunk replaces out.EditID when
// set, and falls back to a new message when that one cannot be edited.
func (a *Adapter) sendOrEditChunk(ctx context.Context, t target, out gateway.Outbound, i int, chunk string, markup models.ReplyMarkup) (int, error) {
	if i == 0 && out.EditID != "" {
		if id, ok := a.editTarget(out.EditID, t); ok {
			err := a.editChunk(ctx, t, id, chunk, markup)
			if err == nil {
				return id, nil
			}
			if !uneditable(err) {
				return 0, err
			}
			a.log.Debug("telegram: preview cannot be edited; sending a new message", zap.Error(err))
		}
	}
	reply := 0
	if i == 0 {
		reply, _ = parseMessageID(out.ReplyTo)
	}
	return a.sendChunk(ctx, t, chunk, reply, markup, out.Silent)
}

// editTarget is the message a reply with EditID replaces: the preview
// message, or the one posted in place of a refused draft. A draft is no
// message: the reply to a streamed draft is a new one.
func (a *Adapter) editTarget(editID string, t target) (int, bool) {
	if isDraftID(editID) {
		id := a.draftReplacement(editID, t)
		return id, id != 0
	}
	return parseMessageID(editID)
}

// sendChunk sends one chunk as HTML and, should Telegram reject the
// entities anyway, as plain text: a reply is never dropped for formatting.
func (a *Adapter) sendChunk(ctx context.Context, t target, chunk string, replyTo int, markup models.ReplyMarkup, silent bool) (int, error) {
	p := &bot.SendMessageParams{
		ChatID:              t.chat,
		MessageThreadID:     t.sendThread,
		Text:                renderHTML(chunk),
		ParseMode:           models.ParseModeHTML,
		ReplyMarkup:         markup,
		DisableNotification: silent,
	}
	if replyTo > 0 {
		p.ReplyParameters = &models.ReplyParameters{MessageID: replyTo, AllowSendingWithoutReply: true}
	}
	if err := ctx.Err(); err != nil {
		return 0, err // never start a send after the caller gave up
	}
	sctx, done := inFlight(ctx)
	defer done()
	m, err := a.sendMessage(sctx, p)
	if err != nil && parseRejected(err) {
		a.log.Warn("telegram: HTML rejected; sending as plain text", zap.Error(err))
		p.Text, p.ParseMode = chunk, ""
		m, err = a.sendMessage(sctx, p)
	}
	if err != nil {
		return 0, err
	}
	a.edits.remember(t.chat, m.ID, chunk)
	return m.ID, nil
}

// sendGrace is how long a sendMessage already on the wire may outlive its
// caller's context.
const sendGrace = 5 * time.Second

// inFlight gives one sendMessage a context that ends sendGrace after ctx
// (or after requestTimeout). sendMessage is not idempotent: abandoning a
// request Telegram may already have executed leaves its outcome unknown,
// and the outbox would send the message a second time after a shutdown.
func inFlight(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(sendGrace, cancel) })
	return c, func() {
		stop()
		cancel()
	}
}

// Edit implements gateway.Platform for streamed previews. Unchanged text is
// not sent again, and Telegram's "message is not modified" is success. A
// preview longer than one message shows its first chunk; the final Send
// splits the whole text.
func (a *Adapter) Edit(ctx context.Context, addr gateway.Address, msgID, text string) error {
	if isDraftID(msgID) {
		return a.editDraft(ctx, addr, msgID, text)
	}
	return a.editFirst(ctx, addr, msgID, text, nil)
}

// editFirst replaces the message's text with text's first part, and its
// buttons with kb when kb is not nil. An empty text keeps the old one:
// Telegram cannot show an empty message.
func (a *Adapter) editFirst(ctx context.Context, addr gateway.Address, msgID, text string, kb *models.InlineKeyboardMarkup) error {
	t, err := targetOf(addr)
	if err != nil {
		return err
	}
	id, ok := parseMessageID(msgID)
	if !ok {
		return fmt.Errorf("telegram: message id %q: %w", msgID, gateway.ErrPermanent)
	}
	chunks := SplitMessage(text, MaxMessageUnits)
	if len(chunks) == 0 {
		return nil
	}
	var markup models.ReplyMarkup
	if kb != nil {
		markup = kb
	}
	if err := a.editChunk(ctx, t, id, chunks[0], markup); err != nil {
		return a.classify(err, addr)
	}
	return nil
}

// EditButtons replaces a message's text (its first part) and gives it
// buttons.
func (a *Adapter) EditButtons(ctx context.Context, addr gateway.Address, msgID, text string, buttons []gateway.Button) error {
	kb, err := keyboard(buttons)
	if err != nil {
		return err
	}
	return a.editFirst(ctx, addr, msgID, text, kb)
}

func (a *Adapter) editChunk(ctx context.Context, t target, id int, chunk string, markup models.ReplyMarkup) error {
	if markup == nil && a.edits.same(t.chat, id, chunk) {
		return nil
	}
	p := &bot.EditMessageTextParams{
		ChatID:      t.chat,
		MessageID:   id,
		Text:        renderHTML(chunk),
		ParseMode:   models.ParseModeHTML,
		ReplyMarkup: markup,
	}
	err := a.editMessageText(ctx, p)
	if err != nil && parseRejected(err) {
		p.Text, p.ParseMode = chunk, ""
		err = a.editMessageText(ctx, p)
	}
	if err != nil && !notModified(err) {
		return err
	}
	a.edits.remember(t.chat, id, chunk)
	return nil
}

// Typing implements gateway.Typer. The General topic needs its thread id
// here, unlike in sendMessage.
func (a *Adapter) Typing(ctx context.Context, addr gateway.Address) error {
	t, err := targetOf(addr)
	if err != nil {
		return err
	}
	err = a.sendChatAction(ctx, &bot.SendChatActionParams{
		ChatID:          t.chat,
		MessageThreadID: t.typeThread,
		Action:          models.ChatActionTyping,
	})
	if err != nil {
		return a.classify(err, addr)
	}
	return nil
}

// registerCommands sets the bot's command menu to the gateway's menu
// commands.
func (a *Adapter) registerCommands(ctx context.Context) error {
	cmds := []models.BotCommand{} // none: an empty menu, not a missing field
	for _, c := range a.cfg.Commands {
		if c.Menu {
			cmds = append(cmds, models.BotCommand{Command: c.Name, Description: c.Description})
		}
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	_, err := a.bot.SetMyCommands(ctx, &bot.SetMyCommandsParams{Commands: cmds})
	return err
}

// classify maps a Bot API failure to what the gateway's outbox branches on:
// 429 → *gateway.RetryAfterError; 400/403 (chat or thread not found, bot
// blocked or kicked) → gateway.ErrPermanent; anything else (5xx, network)
// stays a plain error and is retried with backoff.
func (a *Adapter) classify(err error, addr gateway.Address) error {
	var tm *bot.TooManyRequestsError
	if errors.As(err, &tm) {
		return &gateway.RetryAfterError{After: max(retryAfter(err), time.Second), Err: fmt.Errorf("telegram: %w", err)}
	}
	var me *bot.MigrateError
	permanent := errors.As(err, &me) || errors.Is(err, bot.ErrorBadRequest) || errors.Is(err, bot.ErrorForbidden)
	if !permanent {
		return fmt.Errorf("telegram: %w", err)
	}
	fields := []zap.Field{zap.String("lane", addr.SessionKey()), zap.Error(err)}
	if me != nil {
		fields = append(fields, zap.Int("migrate_to_chat_id", me.MigrateToChatID))
	}
	a.log.Warn("telegram: permanent delivery failure", fields...)
	if errors.Is(err, gateway.ErrPermanent) {
		return err
	}
	return fmt.Errorf("telegram: %w: %w", err, gateway.ErrPermanent)
}

func parseRejected(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(err.Error(), "can't parse entities")
}

func notModified(err error) bool {
	return errors.Is(err, bot.ErrorBadRequest) && strings.Contains(err.Error(), "message is not modified")
}

func uneditable(err error) bool {
	if !errors.Is(err, bot.ErrorBadRequest) {
		return false
	}
	s := err.Error()
	return strings.Contains(s, "message to edit not found") || strings.Contains(s, "message can't be edited")
}

// editCache remembers the last text of recent messages, to skip edits that
// would change nothing. It is only an optimisation (fewer requests while a
// preview streams): an edit it misses is answered "message is not
// modified", which counts as success; delivery identity lives in the
// outbox's parts, not here.
type editCache struct {
	mu   sync.Mutex
	text map[string]string
}

const editCacheMax = 512

func newEditCache() *editCache { return &editCache{text: make(map[string]string)} }

func (c *editCache) same(chat int64, id int, text string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev, ok := c.text[messageID(chat, id)]
	return ok && prev == text
}

func (c *editCache) remember(chat int64, id int, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.text) >= editCacheMax {
		clear(c.text) // bounded; forgetting costs at most one redundant edit
	}
	c.text[messageID(chat, id)] = text
}

// Delete implements gateway.Deleter (deleteMessage). A message already
// gone counts as deleted.
func (a *Adapter) Delete(ctx context.Context, addr gateway.Address, msgID string) error {
	t, err := targetOf(addr)
	if err != nil {
		return err
	}
	if isDraftID(msgID) {
		// A draft vanishes by itself; only a message posted in its place
		// is there to delete.
		replacement := a.draftReplacement(msgID, t)
		a.drafts.forget(msgID)
		if replacement == 0 {
			return nil
		}
		msgID = strconv.Itoa(replacement)
	}
	id, ok := parseMessageID(msgID)
	if !ok {
		return fmt.Errorf("telegram: message id %q: %w", msgID, gateway.ErrPermanent)
	}
	if _, err := a.bot.DeleteMessage(ctx, &bot.DeleteMessageParams{ChatID: t.chat, MessageID: id}); err != nil {
		if strings.Contains(err.Error(), "message to delete not found") {
			return nil
		}
		return a.classify(err, addr)
	}
	return nil
}
