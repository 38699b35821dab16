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
	"go.uber.org/zap"
)

// maxButtonID is Discord's custom_id limit.
const maxButtonID = 100

// Send implements gateway.Platform. Long text is split at 2,000 characters;
// the id of the last message is returned. Each part is recorded through
// out.Parts as soon as Discord accepted it, and a retry of the outbox row
// (in this process or the next) skips the parts in out.SentParts. The part
// in flight when an attempt failed carries the same nonce on the retry
// (see partNonce), so Discord does not post it twice either.
func (a *Adapter) Send(ctx context.Context, out gateway.Outbound) (string, error) {
	return a.send(ctx, out, nil)
}

// SendButtons implements gateway.ButtonSender: the buttons go with the last
// part of the text. Presses come back as Inbound.Callback. A question with
// more options than one row holds gets a select menu instead (see
// questionSelect); a choice comes back the same way.
func (a *Adapter) SendButtons(ctx context.Context, out gateway.Outbound, buttons []gateway.Button) (string, error) {
	rows, err := componentsFor(out, buttons)
	if err != nil {
		return "", err
	}
	id, err := a.send(ctx, out, rows)
	if err == nil {
		a.buttons.put(id, out.Address)
	}
	return id, err
}

// send delivers out, with rows (buttons) on the last part.
func (a *Adapter) send(ctx context.Context, out gateway.Outbound, rows []discordgo.MessageComponent) (string, error) {
	target, err := targetChannel(out.Address)
	if err != nil {
		return "", err
	}
	text := out.Text
	if out.Ping != "" {
		text = "<@" + out.Ping + "> " + text // a long turn's answer notifies who asked
	}
	parts := splitMessage(text, maxMessageRunes)
	if out.Kind == gateway.OutPreview || out.Kind == gateway.OutProgress {
		// A preview (or a turn's status message) is one message that later
		// edits replace; the final reply (EditID = this message) is the one
		// split over several.
		parts = previewParts(out.Text)
	}
	if len(parts) == 0 {
		if rows == nil {
			return "", fmt.Errorf("discord: send: empty message: %w", gateway.ErrPermanent)
		}
		parts = []string{"\u200b"} // buttons need some content
	}
	sent := out.SentParts
	for i := len(sent); i < len(parts); i++ {
		var components []discordgo.MessageComponent
		if i == len(parts)-1 {
			components = rows
		}
		id, err := a.sendPart(ctx, target, out, i, parts[i], components, partNonce(out.ID, i, parts[i]))
		if err != nil {
			return "", err
		}
		if err := out.RecordPart(ctx, i, id); err != nil {
			return "", fmt.Errorf("discord: record part %d of outbox %d: %w", i, out.ID, err)
		}
		sent = append(sent, id)
	}
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
		AllowedMentions: allowedMentions(out),
	}
	if out.Silent {
		msg.Flags = discordgo.MessageFlagsSuppressNotifications
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
// allowedMentions is who a message may notify: the users it names, except
// on an approval question, whose text quotes what the agent chose (a
// command may hold <@id>): only the requester it pings.
func allowedMentions(out gateway.Outbound) *discordgo.MessageAllowedMentions {
	if out.Approval == nil {
		return &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeUsers}}
	}
	m := &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{}}
	if out.Ping != "" {
		m.Users = []string{out.Ping}
	}
	return m
}

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
	Nonce        string `json:"nonce,omitempty"`
	EnforceNonce bool   `json:"enforce_nonce,omitempty"`
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
		nonceMessage{MessageSend: msg, Nonce: nonce, EnforceNonce: nonce != ""}, endpoint, discordgo.WithContext(sctx))
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

// partNonce is the idempotency key of part of outbox row id: the same on
// every attempt of the row, in any process, and different for every other
// row, so Discord (enforce_nonce) answers a retry of a part whose answer
// was lost with the message it created, and never swallows another
// message. The part's text is mixed in so that a database started afresh
// (row ids begin again at 1) within Discord's nonce window cannot turn a
// new message into an old, different one. Previews and direct sends (id 0)
// are sent once and get no nonce.
func partNonce(id int64, part int, text string) string {
	if id == 0 {
		return ""
	}
	sum := sha256.Sum256(fmt.Appendf(nil, "%d\x00%d\x00%s", id, part, text))
	return hex.EncodeToString(sum[:])[:maxNonce]
}

// Edit implements gateway.Platform (streamed previews). A preview longer than
// one message is cut at the limit and marked with "…"; the final reply goes
// through Send with EditID, which splits it.
func (a *Adapter) Edit(ctx context.Context, addr gateway.Address, messageID, text string) error {
	return a.edit(ctx, addr, messageID, text, nil)
}

// edit replaces the message's text (one part of it) and, when rows is not
// nil, its buttons.
func (a *Adapter) edit(ctx context.Context, addr gateway.Address, messageID, text string, rows []discordgo.MessageComponent) error {
	target, err := targetChannel(addr)
	if err != nil {
		return err
	}
	parts := previewParts(text)
	if len(parts) == 0 {
		return fmt.Errorf("discord: edit: empty text: %w", gateway.ErrPermanent)
	}
	edit := discordgo.NewMessageEdit(target, messageID).SetContent(parts[0])
	if rows != nil {
		edit.Components = &rows
	}
	if _, err := a.session.ChannelMessageEditComplex(edit, discordgo.WithContext(ctx)); err != nil {
		return mapError("edit", err)
	}
	return nil
}

// EditButtons replaces a message's text and gives it buttons; presses on
// them reach the message's lane. No buttons removes the message's buttons
// (or select menu): an answered question must not be answered again.
func (a *Adapter) EditButtons(ctx context.Context, addr gateway.Address, messageID, text string, buttons []gateway.Button) error {
	if len(buttons) == 0 {
		// Empty, not nil: Discord keeps the components of an edit that
		// does not name them.
		return a.edit(ctx, addr, messageID, text, []discordgo.MessageComponent{})
	}
	rows, err := buttonRows(buttons)
	if err != nil {
		return err
	}
	if err := a.edit(ctx, addr, messageID, text, rows); err != nil {
		return err
	}
	a.buttons.put(messageID, addr)
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
	for start := 0; start < len(buttons); start += buttonsPerRow {
		row := discordgo.ActionsRow{}
		for _, b := range buttons[start:min(start+buttonsPerRow, len(buttons))] {
			if err := checkButtonID(b.ID); err != nil {
				return nil, err
			}
			row.Components = append(row.Components, discordgo.Button{
				Label: b.Label, CustomID: b.ID, Style: discordgo.SecondaryButton,
			})
		}
		rows = append(rows, row)
	}
	return rows, nil
}

// checkButtonID refuses an id Discord would: it is the custom_id of a
// button, or the value of a select menu's option (both 1 to 100 bytes).
func checkButtonID(id string) error {
	if id == "" || len(id) > maxButtonID {
		return fmt.Errorf("discord: button id %q: must be 1..%d bytes: %w", id, maxButtonID, gateway.ErrPermanent)
	}
	return nil
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

// Delete implements gateway.Deleter. A message already gone (404) counts
// as deleted.
func (a *Adapter) Delete(ctx context.Context, addr gateway.Address, messageID string) error {
	target, err := targetChannel(addr)
	if err != nil {
		return err
	}
	if err := a.session.ChannelMessageDelete(target, messageID, discordgo.WithContext(ctx)); err != nil {
		var rest *discordgo.RESTError
		if errors.As(err, &rest) && rest.Response != nil && rest.Response.StatusCode == http.StatusNotFound {
			return nil
		}
		return mapError("delete", err)
	}
	return nil
}
