package discord

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gatewayd/gatewayd/gateway"
	"go.uber.org/zap"
)

// maxButtonID is Discord's custom_id limit.
const maxButtonID = 100

// Send implements gateway.Platform. Long text is split at 2,000 characters;
// the id of the last message is returned. If a later part fails, the parts
// already sent are remembered, so the outbox's retry sends only the rest.
func (a *Adapter) Send(ctx context.Context, out gateway.Outbound) (string, error) {
	return a.send(ctx, out, nil, "")
}

// SendButtons implements gateway.ButtonSender: the buttons go with the last
// part of the text. Presses come back as Inbound.Callback.
func (a *Adapter) SendButtons(ctx context.Context, out gateway.Outbound, buttons []gateway.Button) (string, error) {
	rows, err := buttonRows(buttons)
	if err != nil {
		return "", err
	}
	ids := make([]string, len(buttons))
	for i, b := range buttons {
		ids[i] = b.ID
	}
	id, err := a.send(ctx, out, rows, strings.Join(ids, "\x00"))
	if err == nil {
		a.buttons.put(id, out.Address)
	}
	return id, err
}

// send delivers out; buttonKey (the button ids) tells deliveries with
// different buttons apart.
func (a *Adapter) send(ctx context.Context, out gateway.Outbound, rows []discordgo.MessageComponent,
	buttonKey string) (string, error) {
	target, err := targetChannel(out.Address)
	if err != nil {
		return "", err
	}
	parts := splitMessage(out.Text, maxMessageRunes)
	if out.Kind == gateway.OutPreview {
		// A preview is one message that later edits replace; the final
		// reply (EditID = this message) is the one split over several.
		parts = previewParts(out.Text)
	}
	if len(parts) == 0 {
		if rows == nil {
			return "", fmt.Errorf("discord: send: empty message: %w", gateway.ErrPermanent)
		}
		parts = []string{"\u200b"} // buttons need some content
	}
	key := progressKey(out, rows != nil, buttonKey)
	sent, salt := a.progress.begin(key, out.ReplyTo != "" || out.EditID != "")
	for i := len(sent); i < len(parts); i++ {
		var components []discordgo.MessageComponent
		if i == len(parts)-1 {
			components = rows
		}
		id, err := a.sendPart(ctx, target, out, i, parts[i], components, partNonce(key, salt, i))
		if err != nil {
			a.progress.fail(key, sent)
			return "", err
		}
		sent = append(sent, id)
	}
	a.progress.done(key)
	return sent[len(sent)-1], nil
}

// sendPart sends (or, for the first part of an edit, edits) one part. When
// the message to edit is gone (the user or a moderator deleted the streamed
// preview) the first part is posted as a new message: the final reply must
// not be lost with its preview.
func (a *Adapter) sendPart(ctx context.Context, target string, out gateway.Outbound, i int, text string,
	components []discordgo.MessageComponent, nonce string) (string, error) {
	if i == 0 && out.EditID != "" {
		edit := discordgo.NewMessageEdit(target, out.EditID).SetContent(text)
		if components != nil {
			edit.Components = &components
		}
		_, err := a.session.ChannelMessageEditComplex(edit, discordgo.WithContext(ctx))
		if err == nil {
			return out.EditID, nil
		}
		if !uneditable(err) {
			return "", mapError("edit", err)
		}
		a.log.Info("discord.preview_uneditable: sending the reply as a new message",
			zap.String("message_id", out.EditID), zap.Error(mapError("edit", err)))
	}
	msg := &discordgo.MessageSend{
		Content:         text,
		Components:      components,
		AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeUsers}},
	}
	// A thread started from a message has that message's id; replying to
	// it from inside the thread is not possible, so skip the reference.
	if i == 0 && out.ReplyTo != "" && out.ReplyTo != target && out.ReplyTo != out.Address.TopicID {
		fail := false
		msg.Reference = &discordgo.MessageReference{MessageID: out.ReplyTo, FailIfNotExists: &fail}
	}
	m, err := a.postMessage(ctx, target, msg, nonce)
	if err != nil {
		return "", mapError("send", err)
	}
	return m.ID, nil
}

// uneditable reports an edit that failed because the message cannot be
// edited any more: it was deleted (404, Unknown Message) or is not the
// bot's (50005). An unknown channel is not included: posting there fails
// the same way.
func uneditable(err error) bool {
	var re *discordgo.RESTError
	if !errors.As(err, &re) || re.Response == nil {
		return false
	}
	code := 0
	if re.Message != nil {
		code = re.Message.Code
	}
	switch {
	case code == discordgo.ErrCodeUnknownMessage, code == discordgo.ErrCodeCannotEditFromAnotherUser:
		return true
	case re.Response.StatusCode == http.StatusNotFound:
		return code != discordgo.ErrCodeUnknownChannel
	}
	return false
}

// nonceMessage is a message create with Discord's idempotency nonce, which
// discordgo's MessageSend lacks.
type nonceMessage struct {
	*discordgo.MessageSend
	Nonce        string `json:"nonce"`
	EnforceNonce bool   `json:"enforce_nonce"`
}

// postMessage creates a message with enforce_nonce: when a send whose
// answer was lost (a timeout, a cancelled request) is retried, Discord
// returns the message already created instead of posting it twice.
//
// A create is not started once ctx has ended, but one already on the wire
// is given sendGrace to finish (see inFlight): abandoning it would leave a
// message Discord may have created without its id, so a streamed preview
// could not be edited into the final reply and the user would see both.
func (a *Adapter) postMessage(ctx context.Context, channelID string, msg *discordgo.MessageSend, nonce string) (*discordgo.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err // never start a send after the caller gave up
	}
	sctx, done := inFlight(ctx)
	defer done()
	endpoint := discordgo.EndpointChannelMessages(channelID)
	body, err := a.session.RequestWithBucketID(http.MethodPost, endpoint,
		nonceMessage{MessageSend: msg, Nonce: nonce, EnforceNonce: true}, endpoint, discordgo.WithContext(sctx))
	if err != nil {
		return nil, err
	}
	var m discordgo.Message
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("decode message: %w", err)
	}
	return &m, nil
}

// sendGrace is how long a message create already on the wire may outlive
// its caller's context (the same grace as the Telegram adapter's).
const sendGrace = 5 * time.Second

// inFlight gives one message create a context that ends sendGrace after
// ctx does. The HTTP client's timeout still bounds the request.
func inFlight(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(sendGrace, cancel) })
	return c, func() {
		stop()
		cancel()
	}
}

// maxNonce is Discord's nonce length limit.
const maxNonce = 25

// partNonce identifies one part of one delivery: the key (lane, reply-to,
// edit id, buttons, text) plus the delivery's salt (see sendProgress.begin).
// A retry of the delivery reuses the salt and so the nonce; a new delivery
// of identical text gets a new salt, so Discord does not answer it with the
// earlier message (enforce_nonce looks back a few minutes).
func partNonce(key [32]byte, salt string, part int) string {
	sum := sha256.Sum256(fmt.Appendf(key[:], "\x00%s\x00%d", salt, part))
	return hex.EncodeToString(sum[:])[:maxNonce]
}

// Edit implements gateway.Editor (streamed previews). A preview longer than
// one message is cut at the limit and marked with "…"; the final reply goes
// through Send with EditID, which splits it.
func (a *Adapter) Edit(ctx context.Context, addr gateway.Address, messageID, text string) error {
	target, err := targetChannel(addr)
	if err != nil {
		return err
	}
	parts := previewParts(text)
	if len(parts) == 0 {
		return fmt.Errorf("discord: edit: empty text: %w", gateway.ErrPermanent)
	}
	edit := discordgo.NewMessageEdit(target, messageID).SetContent(parts[0])
	if _, err := a.session.ChannelMessageEditComplex(edit, discordgo.WithContext(ctx)); err != nil {
		return mapError("edit", err)
	}
	return nil
}

// Typing implements gateway.Typer; Discord shows it for about ten seconds.
func (a *Adapter) Typing(ctx context.Context, addr gateway.Address) error {
	target, err := targetChannel(addr)
	if err != nil {
		return err
	}
	if err := a.session.ChannelTyping(target, discordgo.WithContext(ctx)); err != nil {
		return mapError("typing", err)
	}
	return nil
}

// previewParts cuts a streamed preview to one message, marked with "…"
// when the text goes on.
func previewParts(text string) []string {
	parts := splitMessage(text, maxMessageRunes-1)
	if len(parts) > 1 {
		parts = []string{parts[0] + "…"}
	}
	return parts
}

// targetChannel is the Discord channel a lane's messages go to.
func targetChannel(addr gateway.Address) (string, error) {
	if err := addr.Validate(); err != nil {
		return "", fmt.Errorf("discord: %w: %w", err, gateway.ErrPermanent)
	}
	if addr.Platform != PlatformName {
		return "", fmt.Errorf("discord: address for platform %q: %w", addr.Platform, gateway.ErrPermanent)
	}
	if addr.Kind == gateway.LaneThread {
		return addr.TopicID, nil
	}
	return addr.ChatID, nil
}

func buttonRows(buttons []gateway.Button) ([]discordgo.MessageComponent, error) {
	if len(buttons) == 0 || len(buttons) > 25 {
		return nil, fmt.Errorf("discord: %d buttons (1 to 25 allowed): %w", len(buttons), gateway.ErrPermanent)
	}
	var rows []discordgo.MessageComponent
	for start := 0; start < len(buttons); start += 5 {
		row := discordgo.ActionsRow{}
		for _, b := range buttons[start:min(start+5, len(buttons))] {
			if b.ID == "" || len(b.ID) > maxButtonID {
				return nil, fmt.Errorf("discord: button id %q: must be 1..%d bytes: %w", b.ID, maxButtonID, gateway.ErrPermanent)
			}
			row.Components = append(row.Components, discordgo.Button{
				Label: b.Label, CustomID: b.ID, Style: discordgo.SecondaryButton,
			})
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// mapError turns discordgo errors into what the gateway branches on:
// a rate limit becomes *gateway.RetryAfterError; 400/401/403/404 are
// permanent (bad request, bad token, missing access, unknown channel).
func mapError(op string, err error) error {
	var rl *discordgo.RateLimitError
	if errors.As(err, &rl) && rl.RateLimit != nil && rl.TooManyRequests != nil {
		return &gateway.RetryAfterError{After: rl.RetryAfter, Err: fmt.Errorf("discord: %s: %w", op, err)}
	}
	if errors.Is(err, discordgo.ErrUnauthorized) {
		return fmt.Errorf("discord: %s: unauthorized: %w", op, gateway.ErrPermanent)
	}
	var re *discordgo.RESTError
	if errors.As(err, &re) && re.Response != nil {
		switch re.Response.StatusCode {
		case http.StatusBadRequest, http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound:
			return fmt.Errorf("discord: %s: %s: %w", op, restSummary(re), gateway.ErrPermanent)
		}
		return fmt.Errorf("discord: %s: %s", op, restSummary(re))
	}
	return fmt.Errorf("discord: %s: %w", op, err)
}

func restSummary(re *discordgo.RESTError) string {
	if re.Message != nil {
		return fmt.Sprintf("HTTP %d (code %d: %s)", re.Response.StatusCode, re.Message.Code, re.Message.Message)
	}
	return fmt.Sprintf("HTTP %d", re.Response.StatusCode)
}

// sendProgress remembers, per delivery key, the parts already sent when a
// later part failed (so the outbox's retry sends only the rest) and the
// salt of the delivery's nonces, for an hour.
//
// Why a salt: gateway.Outbound carries nothing that identifies an outbox
// row, so two deliveries of the same text to the same lane with the same
// reply-to (the same "Queued" notice in two bursts) have the same key. A
// nonce derived from the key alone made Discord (enforce_nonce) answer the
// second with the first message: it was silently not shown. So:
//
//   - a retry (the previous attempt of the key failed, its outcome maybe
//     unknown) reuses the previous attempt's salt: a message created by an
//     attempt whose answer was lost is returned, not posted twice;
//   - a delivery after one that succeeded gets a fresh random salt: it is a
//     new message, and is shown;
//   - a first delivery of a key that has a reply-to or edit id uses the
//     empty salt, which is what every process uses: such a key names one
//     answer to one inbound message, so a retry by the next process (after
//     a crash mid-send) is still recognised. A first delivery without them
//     (a lane notice) gets a random salt: after a restart, an identical
//     notice sent minutes earlier by the previous process would otherwise
//     swallow it. The cost is that a notice whose send was cut off by a
//     crash may be shown twice, which is better than not at all.
type sendProgress struct {
	mu     sync.Mutex
	now    func() time.Time
	m      map[[32]byte]progressEntry
	pruned time.Time // when expired entries were last removed
}

type progressEntry struct {
	ids  []string // parts sent by a failed delivery
	salt string
	ok   bool // the last delivery of the key succeeded
	at   time.Time
}

const progressTTL = time.Hour

func newSendProgress(now func() time.Time) *sendProgress {
	return &sendProgress{now: now, m: map[[32]byte]progressEntry{}}
}

// progressKey identifies what is sent. Kind and InReplyTo are left out on
// purpose: the outbox's retry of a reply may not carry them (a restart
// loses the turn info), and must still match the first attempt. Only
// "preview or not" is kept, since a preview is cut to one part.
func progressKey(out gateway.Outbound, buttons bool, buttonKey string) [32]byte {
	return sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%t\x00%t\x00%s\x00%s",
		out.Address.SessionKey(), out.ReplyTo, out.EditID, out.Kind == gateway.OutPreview, buttons, buttonKey, out.Text))
}

// begin starts a delivery of key: it returns the parts already sent by a
// failed earlier attempt and the salt for the delivery's nonces. stable
// says the key names one answer (it has a reply-to or edit id).
func (p *sendProgress) begin(key [32]byte, stable bool) (sent []string, salt string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	e, ok := p.m[key]
	if ok && now.Sub(e.at) > progressTTL {
		ok = false
	}
	switch {
	case ok && !e.ok:
		sent, salt = append([]string(nil), e.ids...), e.salt // a retry
	case ok || !stable:
		salt = rand.Text() // a new delivery of something sent before, or a notice
	}
	if now.Sub(p.pruned) > time.Minute {
		p.pruned = now
		for k, old := range p.m {
			if now.Sub(old.at) > progressTTL {
				delete(p.m, k)
			}
		}
	}
	p.m[key] = progressEntry{ids: sent, salt: salt, at: now}
	return sent, salt
}

// fail records the parts sent by a failed attempt; the next attempt of the
// key is its retry.
func (p *sendProgress) fail(key [32]byte, ids []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	e := p.m[key]
	e.ids, e.ok, e.at = append([]string(nil), ids...), false, p.now()
	p.m[key] = e
}

// done records a delivery that succeeded; the next one of the key is new.
func (p *sendProgress) done(key [32]byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[key] = progressEntry{ok: true, at: p.now()}
}

// buttonLanes remembers which lane a button message belongs to, so a
// press is checked against that lane (per-user lanes included).
type buttonLanes struct {
	mu    sync.Mutex
	m     map[string]gateway.Address
	order []string
}

const maxButtonLanes = 1000

func newButtonLanes() *buttonLanes { return &buttonLanes{m: map[string]gateway.Address{}} }

func (b *buttonLanes) put(messageID string, addr gateway.Address) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.m[messageID]; !ok {
		b.order = append(b.order, messageID)
	}
	b.m[messageID] = addr
	if len(b.order) > maxButtonLanes {
		delete(b.m, b.order[0])
		b.order = b.order[1:]
	}
}

func (b *buttonLanes) get(messageID string) (gateway.Address, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	addr, ok := b.m[messageID]
	return addr, ok
}
