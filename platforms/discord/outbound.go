package discord

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/bwmarrin/discordgo"
	"github.com/gatewayd/gatewayd/gateway"
)

// maxButtonID is Discord's custom_id limit.
const maxButtonID = 100

// Send implements gateway.Platform. Long text is split at 2,000 characters;
// the id of the last message is returned. If a later part fails, the parts
// already sent are remembered, so the outbox's retry sends only the rest.
func (a *Adapter) Send(ctx context.Context, out gateway.Outbound) (string, error) {
	return a.send(ctx, out, nil)
}

// SendButtons implements gateway.ButtonSender: the buttons go with the last
// part of the text. Presses come back as Inbound.Callback.
func (a *Adapter) SendButtons(ctx context.Context, out gateway.Outbound, buttons []gateway.Button) (string, error) {
	rows, err := buttonRows(buttons)
	if err != nil {
		return "", err
	}
	id, err := a.send(ctx, out, rows)
	if err == nil {
		a.buttons.put(id, out.Address)
	}
	return id, err
}

func (a *Adapter) send(ctx context.Context, out gateway.Outbound, rows []discordgo.MessageComponent) (string, error) {
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
	key := progressKey(out, rows != nil)
	sent := a.progress.get(key)
	for i := len(sent); i < len(parts); i++ {
		var components []discordgo.MessageComponent
		if i == len(parts)-1 {
			components = rows
		}
		id, err := a.sendPart(ctx, target, out, i, parts[i], components)
		if err != nil {
			a.progress.put(key, sent)
			return "", err
		}
		sent = append(sent, id)
	}
	a.progress.drop(key)
	return sent[len(sent)-1], nil
}

// sendPart sends (or, for the first part of an edit, edits) one part.
func (a *Adapter) sendPart(ctx context.Context, target string, out gateway.Outbound, i int, text string,
	components []discordgo.MessageComponent) (string, error) {
	if i == 0 && out.EditID != "" {
		edit := discordgo.NewMessageEdit(target, out.EditID).SetContent(text)
		if components != nil {
			edit.Components = &components
		}
		if _, err := a.session.ChannelMessageEditComplex(edit, discordgo.WithContext(ctx)); err != nil {
			return "", mapError("edit", err)
		}
		return out.EditID, nil
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
	m, err := a.postMessage(ctx, target, msg, partNonce(out, components != nil, i))
	if err != nil {
		return "", mapError("send", err)
	}
	return m.ID, nil
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
func (a *Adapter) postMessage(ctx context.Context, channelID string, msg *discordgo.MessageSend, nonce string) (*discordgo.Message, error) {
	endpoint := discordgo.EndpointChannelMessages(channelID)
	body, err := a.session.RequestWithBucketID(http.MethodPost, endpoint,
		nonceMessage{MessageSend: msg, Nonce: nonce, EnforceNonce: true}, endpoint, discordgo.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	var m discordgo.Message
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("decode message: %w", err)
	}
	return &m, nil
}

// maxNonce is Discord's nonce length limit.
const maxNonce = 25

// partNonce identifies one part of one outbound message: the same reply
// retried gets the same nonce. (Discord remembers nonces for a few minutes,
// so an identical message to the same lane within that time is also
// recognised as the same one.)
func partNonce(out gateway.Outbound, buttons bool, part int) string {
	key := progressKey(out, buttons)
	sum := sha256.Sum256(fmt.Appendf(key[:], "\x00%d", part))
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

// sendProgress remembers the parts of a split message already sent when a
// later part failed, for an hour.
type sendProgress struct {
	mu  sync.Mutex
	now func() time.Time
	m   map[[32]byte]progressEntry
}

type progressEntry struct {
	ids []string
	at  time.Time
}

const progressTTL = time.Hour

func newSendProgress(now func() time.Time) *sendProgress {
	return &sendProgress{now: now, m: map[[32]byte]progressEntry{}}
}

func progressKey(out gateway.Outbound, buttons bool) [32]byte {
	// Kind and InReplyTo are left out on purpose: the outbox's retry of a
	// reply may not carry them, and must still match the first attempt.
	return sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%s\x00%t\x00%s",
		out.Address.SessionKey(), out.ReplyTo, out.EditID, buttons, out.Text))
}

func (p *sendProgress) get(key [32]byte) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	e, ok := p.m[key]
	if !ok || p.now().Sub(e.at) > progressTTL {
		return nil
	}
	return append([]string(nil), e.ids...)
}

func (p *sendProgress) put(key [32]byte, ids []string) {
	if len(ids) == 0 {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	for k, e := range p.m {
		if now.Sub(e.at) > progressTTL {
			delete(p.m, k)
		}
	}
	p.m[key] = progressEntry{ids: ids, at: now}
}

func (p *sendProgress) drop(key [32]byte) {
	p.mu.Lock()
	delete(p.m, key)
	p.mu.Unlock()
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
