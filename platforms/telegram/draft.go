package telegram

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway"
)

// A private chat's preview can stream as a native draft (Bot API 9.5
// sendMessageDraft): the client animates the growing text in place of the
// reply instead of showing a message edited every few seconds. A draft is
// not a message: it has no message id, cannot be edited into the reply,
// and vanishes once the bot sends its message to the chat. So the
// preview's id names the draft ("draft:<chat>:<draft_id>"), Edit streams
// the draft again, and the final reply (Send with that EditID) goes out as
// a new message, once, through the outbox as any reply.
//
// Where Telegram refuses drafts (a Bot API server without the method, a
// chat it does not allow them in) the chat falls back to the preview
// message and its edits, and the adapter remembers it, so no later delta
// asks again. A delta's text is never lost: each push carries the whole
// preview, and a draft refused mid-stream is posted as the preview message
// at once, which the following edits and the final reply replace.

// draftIDPrefix marks a preview id naming a draft, never a message.
const draftIDPrefix = "draft:"

// maxDraftID keeps draft ids in the 32 bits the Bot API documents for an
// Integer without the "more than 32 significant bits" note.
const maxDraftID = 1<<31 - 1

// Bounds of the adapter's draft bookkeeping: forgetting an open draft
// costs a stray preview message at worst (a draft refused mid-stream whose
// reply then cannot find it), forgetting a refusal one more refused call.
const (
	maxOpenDrafts   = 512
	maxRefusedChats = 4096
)

// draftParams are sendMessageDraft's parameters. go-telegram/bot v1.19.0
// declares draft_id as a string; the Bot API documents an Integer, which
// is what goes on the wire here.
type draftParams struct {
	ChatID          int64            `json:"chat_id"`
	MessageThreadID int              `json:"message_thread_id,omitempty"`
	DraftID         int64            `json:"draft_id"`
	Text            string           `json:"text"`
	ParseMode       models.ParseMode `json:"parse_mode,omitempty"`
}

// draft is one streamed preview shown as a draft.
type draft struct {
	target  target
	id      int64
	replyTo int // the message the preview answers
	// message is the preview message posted in the draft's place after
	// Telegram refused it mid-stream; 0 while the draft streams.
	message int
}

// draftBook is the adapter's memory of drafts: the open ones by preview
// id, and where Telegram refused them.
type draftBook struct {
	mu          sync.Mutex
	last        int64          // the last draft id handed out
	unsupported bool           // the Bot API server has no sendMessageDraft
	refused     map[int64]bool // chats where drafts were refused
	open        map[string]*draft
}

// newDraftBook starts the draft ids at seed (the clock), so a restarted
// process does not animate its first drafts out of the last ones.
func newDraftBook(seed int64) *draftBook {
	return &draftBook{last: int64(uint64(seed) % maxDraftID), refused: make(map[int64]bool), open: make(map[string]*draft)}
}

// allowed reports whether chat's previews may stream as drafts.
func (b *draftBook) allowed(chat int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return !b.unsupported && !b.refused[chat]
}

// start opens a draft for t with a new id and returns its preview id.
func (b *draftBook) start(t target, replyTo int) (string, *draft) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.last = b.last%maxDraftID + 1 // never 0: the Bot API refuses a zero draft_id
	d := &draft{target: t, id: b.last, replyTo: replyTo}
	pid := draftIDPrefix + strconv.FormatInt(t.chat, 10) + ":" + strconv.FormatInt(d.id, 10)
	if len(b.open) >= maxOpenDrafts {
		clear(b.open)
	}
	b.open[pid] = d
	return pid, d
}

// lookup returns the open draft of a preview id, or one rebuilt from the
// id itself when it was forgotten; ok is false for an id that is not a
// draft's.
func (b *draftBook) lookup(pid string, addrTarget target) (d draft, ok bool) {
	chatID, idText, found := strings.Cut(strings.TrimPrefix(pid, draftIDPrefix), ":")
	chat, errChat := strconv.ParseInt(chatID, 10, 64)
	id, errID := strconv.ParseInt(idText, 10, 64)
	if !isDraftID(pid) || !found || errChat != nil || errID != nil || id <= 0 {
		return draft{}, false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if open, ok := b.open[pid]; ok {
		return *open, true
	}
	return draft{target: target{chat: chat, sendThread: addrTarget.sendThread, typeThread: addrTarget.typeThread}, id: id}, true
}

// replaced records the preview message posted in a refused draft's place.
func (b *draftBook) replaced(pid string, d draft) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.open) >= maxOpenDrafts {
		clear(b.open)
	}
	b.open[pid] = &d
}

// forget drops an open draft once its reply is out or its preview dropped.
func (b *draftBook) forget(pid string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.open, pid)
}

// refuse remembers that Telegram refused drafts in chat, or everywhere
// when the server does not know the method; it reports whether this is
// news (to log it once).
func (b *draftBook) refuse(chat int64, everywhere bool) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if everywhere {
		news := !b.unsupported
		b.unsupported = true
		return news
	}
	if b.refused[chat] {
		return false
	}
	if len(b.refused) >= maxRefusedChats {
		clear(b.refused)
	}
	b.refused[chat] = true
	return true
}

func isDraftID(id string) bool { return strings.HasPrefix(id, draftIDPrefix) }

// draftable reports whether out is a preview to stream as a draft: drafts
// are on, the lane is a private chat (groups and forum topics keep the
// edited message), and Telegram has not refused them there.
func (a *Adapter) draftable(out gateway.Outbound, t target) bool {
	return a.cfg.DraftStreaming && out.Kind == gateway.OutPreview &&
		out.Address.Kind == gateway.LaneDM && a.drafts.allowed(t.chat)
}

// startDraft shows a preview's first version as a new draft. ok false
// with a nil error: Telegram refused the draft, and the caller posts the
// preview as a message instead.
func (a *Adapter) startDraft(ctx context.Context, t target, out gateway.Outbound, chunk string) (pid string, ok bool, err error) {
	replyTo, _ := parseMessageID(out.ReplyTo)
	pid, d := a.drafts.start(t, replyTo)
	err = a.sendDraft(ctx, d.target, d.id, chunk)
	if err == nil {
		return pid, true, nil
	}
	a.drafts.forget(pid)
	if a.refusedDraft(err, t.chat, out.Address) {
		return "", false, nil
	}
	return "", false, a.classify(err, out.Address)
}

// editDraft streams a draft preview's new text. Refused, the text is
// posted at once as the preview message, which later edits (and the
// final reply) replace, so no delta's text is lost.
func (a *Adapter) editDraft(ctx context.Context, addr gateway.Address, pid, text string) error {
	t, err := targetOf(addr)
	if err != nil {
		return err
	}
	d, ok := a.drafts.lookup(pid, t)
	if !ok {
		return fmt.Errorf("telegram: draft id %q: %w", pid, gateway.ErrPermanent)
	}
	if d.message != 0 {
		return a.editFirst(ctx, addr, messageID(d.target.chat, d.message), text, nil)
	}
	chunks := SplitMessage(text, MaxMessageUnits)
	if len(chunks) == 0 {
		return nil
	}
	err = a.sendDraft(ctx, d.target, d.id, chunks[0])
	if err == nil {
		return nil
	}
	if !a.refusedDraft(err, d.target.chat, addr) {
		return a.classify(err, addr)
	}
	id, err := a.sendChunk(ctx, d.target, chunks[0], d.replyTo, nil, false)
	if err != nil {
		return a.classify(err, addr)
	}
	d.message = id
	a.drafts.replaced(pid, d)
	return nil
}

// draftReplacement is the preview message a refused draft was replaced
// by, 0 when there is none (the draft itself streamed).
func (a *Adapter) draftReplacement(pid string, t target) int {
	d, ok := a.drafts.lookup(pid, t)
	if !ok {
		return 0
	}
	return d.message
}

// sendDraft calls sendMessageDraft with chunk as HTML and, should Telegram
// reject the entities, as plain text.
func (a *Adapter) sendDraft(ctx context.Context, t target, id int64, chunk string) error {
	p := &draftParams{ChatID: t.chat, MessageThreadID: t.sendThread, DraftID: id,
		Text: renderHTML(chunk), ParseMode: models.ParseModeHTML}
	err := a.callJSON(ctx, "sendMessageDraft", p, nil)
	if err != nil && parseRejected(err) {
		p.Text, p.ParseMode = chunk, ""
		err = a.callJSON(ctx, "sendMessageDraft", p, nil)
	}
	return err
}

// refusedDraft reports whether err refuses drafts rather than failing one
// call, and remembers the refusal: 404 is a Bot API server without the
// method (every chat), 400 or 403 this chat (one drafts are not allowed
// in). A rate limit or a network failure is no refusal: the streamer
// pushes the whole preview again on its next tick.
func (a *Adapter) refusedDraft(err error, chat int64, addr gateway.Address) bool {
	everywhere := errors.Is(err, bot.ErrorNotFound)
	if !everywhere && !errors.Is(err, bot.ErrorBadRequest) && !errors.Is(err, bot.ErrorForbidden) {
		return false
	}
	if a.drafts.refuse(chat, everywhere) {
		a.log.Info("telegram: draft refused; previews stream as edited messages instead",
			zap.String("lane", addr.SessionKey()), zap.Bool("every_chat", everywhere), zap.Error(err))
	}
	return true
}
