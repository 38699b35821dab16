package matrix

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"strings"
	"time"

	"go.uber.org/zap"
	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/gatewayd/gatewayd/gateway"
)

// requestTimeout bounds one client-server call other than /sync and media.
const requestTimeout = 30 * time.Second

// txnID is the transaction id of one send: the same on every attempt of
// part `part` of outbox row `row` (in any process), different for every
// other row and part, so the homeserver stores a retried send once. The
// text is mixed in so a database started afresh (row ids from 1 again)
// cannot alias an old message still inside the homeserver's txn window.
func txnID(row int64, part int, op, text string) string {
	h := sha256.New()
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], uint64(row))
	binary.BigEndian.PutUint64(b[8:], uint64(part))
	h.Write(b[:])
	h.Write([]byte(op))
	h.Write([]byte{0})
	h.Write([]byte(text))
	return "gwd" + hex.EncodeToString(h.Sum(nil))[:32]
}

// sendTxn is txnID for an outbox row, and a fresh id for a preview or a
// direct send (row 0), which are sent whole or not at all.
func (a *Adapter) sendTxn(row int64, part int, op, text string) string {
	if row == 0 {
		return a.cli.TxnID()
	}
	return txnID(row, part, op, text)
}

// target reads a lane's room and thread root.
func target(addr gateway.Address) (room id.RoomID, root id.EventID, err error) {
	if addr.Platform != PlatformName || addr.ChatID == "" {
		return "", "", fmt.Errorf("matrix: %s is not a Matrix lane: %w", addr.SessionKey(), gateway.ErrPermanent)
	}
	if addr.Kind == gateway.LaneThread {
		return id.RoomID(addr.ChatID), id.EventID(addr.TopicID), nil
	}
	return id.RoomID(addr.ChatID), "", nil
}

// textContent is one part as an m.room.message: Codex's markdown verbatim
// as the plain body (no character lost) and rendered as HTML, raw HTML
// escaped. fence is a code fence left open by the previous part, reopened
// for the rendering only. Mentions are explicitly empty so nobody is pinged
// by accident, except ping on a long turn's answer.
func textContent(chunk, fence string, notice bool, ping string) *event.MessageEventContent {
	src := chunk
	if fence != "" {
		src = fence + "\n" + chunk
	}
	c := renderMarkdown(src)
	c.Body = chunk
	c.MsgType = event.MsgText
	if notice {
		c.MsgType = event.MsgNotice
	}
	c.Mentions = &event.Mentions{}
	if ping != "" {
		c.Mentions.Add(id.UserID(ping))
		name := localpart(id.UserID(ping))
		pill := fmt.Sprintf(`<a href="https://matrix.to/#/%s">%s</a>: `, html.EscapeString(ping), html.EscapeString(name))
		if c.Format == "" {
			c.Format, c.FormattedBody = event.FormatHTML, html.EscapeString(chunk)
		}
		c.Body = name + ": " + chunk
		c.FormattedBody = pill + c.FormattedBody
	}
	return &c
}

// relate puts a part where its lane is: in the thread (with the reply
// fallback for clients without threads), or as a reply in a room.
func relate(c *event.MessageEventContent, root id.EventID, replyTo string) {
	switch {
	case root != "":
		fallback := root
		if replyTo != "" {
			fallback = id.EventID(replyTo)
		}
		c.RelatesTo = (&event.RelatesTo{}).SetThread(root, fallback)
	case replyTo != "":
		c.RelatesTo = (&event.RelatesTo{}).SetReplyTo(id.EventID(replyTo))
	}
}

// outParts splits out's text into parts that each fit in one event.
func (a *Adapter) outParts(out gateway.Outbound) []string {
	if out.Kind == gateway.OutPreview || out.Kind == gateway.OutProgress {
		if out.Text == "" {
			return nil
		}
		return []string{previewPart(out.Text)}
	}
	// Measured as the largest form a part can take: an edit of a
	// longest-id event, in a thread, with the ping.
	longest := id.EventID("$" + strings.Repeat("x", 254))
	return splitMeasured(out.Text, func(p string) any {
		c := textContent(p, "", false, out.Ping)
		relate(c, longest, string(longest))
		return editContent(longest, c, nil)
	})
}

// Send implements gateway.Platform: each part is recorded as soon as the
// homeserver accepted it, and a retry of the row sends only the parts
// after out.SentParts, each with the transaction id of its row and part.
func (a *Adapter) Send(ctx context.Context, out gateway.Outbound) (string, error) {
	return a.send(ctx, out, nil)
}

func (a *Adapter) send(ctx context.Context, out gateway.Outbound, choices map[string]string) (string, error) {
	room, root, err := target(out.Address)
	if err != nil {
		return "", err
	}
	parts := a.outParts(out)
	if len(parts) == 0 {
		return "", fmt.Errorf("matrix: send: empty message: %w", gateway.ErrPermanent)
	}
	sent := out.SentParts
	fence := ""
	for i, p := range parts {
		if i < len(sent) {
			fence = fenceState(fence, p)
			continue
		}
		c := textContent(p, fence, quiet(out.Kind), pingOf(out, i))
		fence = fenceState(fence, p)
		relate(c, root, out.ReplyTo)
		var ch map[string]string
		if i == len(parts)-1 {
			ch = choices
		}
		eid, err := a.sendPart(ctx, room, out, i, c, ch)
		if err != nil {
			return "", err
		}
		if i == len(parts)-1 {
			err = out.RecordLastPart(ctx, i, eid)
		} else {
			err = out.RecordPart(ctx, i, eid)
		}
		if err != nil {
			return "", fmt.Errorf("matrix: record part %d of outbox %d: %w", i, out.ID, err)
		}
		sent = append(sent, eid)
	}
	last := sent[len(sent)-1]
	a.afterSend(ctx, out, room, root, last)
	return last, nil
}

// quiet kinds go as m.notice: clients do not notify for them, and bots
// (this one included) do not answer them. A preview is m.text, since the
// final reply only edits it and edits notify nobody.
func quiet(k gateway.OutKind) bool {
	return k == gateway.OutNotice || k == gateway.OutProgress
}

// pingOf: a long turn's answer mentions its requester in its first part.
func pingOf(out gateway.Outbound, part int) string {
	if part == 0 {
		return out.Ping
	}
	return ""
}

// sendPart posts one part, or for part 0 of a reply to a preview, edits
// the preview in place. A ping is never an edit: Matrix's default push
// rules silence edits, so the mention must be a new event (the preview is
// redacted after it).
func (a *Adapter) sendPart(ctx context.Context, room id.RoomID, out gateway.Outbound, i int,
	c *event.MessageEventContent, choices map[string]string) (string, error) {
	if i == 0 && out.EditID != "" && out.Ping == "" {
		txn := a.sendTxn(out.ID, i, "edit", c.Body)
		if out.ID == 0 {
			txn = a.editTxns.txn(id.EventID(out.EditID), c.Body)
		}
		err := a.edit(ctx, room, id.EventID(out.EditID), c, choices, txn)
		if err == nil {
			return out.EditID, nil
		}
		if !errors.Is(err, gateway.ErrPermanent) {
			return "", err
		}
		a.log.Info("matrix.preview_uneditable: sending the reply as a new message", zap.String("event_id", out.EditID), zap.Error(err))
	}
	var content any = c
	if choices != nil {
		content = choiceMessage{c, choices}
	}
	if out.ID == 0 { // no row: a retry by the caller could not reuse the id
		return a.postRetrying(ctx, room, event.EventMessage, content, a.sendTxn(out.ID, i, "send", c.Body))
	}
	return a.post(ctx, room, event.EventMessage, content, a.sendTxn(out.ID, i, "send", c.Body))
}

// choiceMessage is a message offering choices: the emoji → button map
// travels in the event itself, so a reaction is understood after a restart.
type choiceMessage struct {
	*event.MessageEventContent
	Choices map[string]string `json:"io.gatewayd.choices,omitempty"`
}

// post sends one event. A send is not started once ctx has ended, but one
// already on the wire is given sendGrace to finish: abandoning it would
// leave an event the homeserver may have stored without its id, so a
// streamed preview (sent with no outbox row) could not be edited into the
// final reply and the user would see both.
func (a *Adapter) post(ctx context.Context, room id.RoomID, typ event.Type, content any, txn string) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("matrix: send: %w", err)
	}
	if d, cooling := a.cooldown(); cooling {
		return "", &gateway.RetryAfterError{After: d, Err: errors.New("matrix: send: rate limited")}
	}
	sctx, done := inFlight(ctx)
	defer done()
	sctx, cancel := context.WithTimeout(sctx, requestTimeout)
	defer cancel()
	resp, err := a.cli.SendMessageEvent(sctx, room, typ, content, mautrix.ReqSendEvent{TransactionID: txn})
	if err != nil {
		a.noteRateLimit(err)
		return "", mapError("send", err)
	}
	return string(resp.EventID), nil
}

// afterSend: a ping replaced the preview, so the preview goes; a final
// reply ends the typing indicator; the thread is now one the bot speaks in.
func (a *Adapter) afterSend(ctx context.Context, out gateway.Outbound, room id.RoomID, root id.EventID, last string) {
	if out.Kind == gateway.OutPreview {
		a.previews.touch(last, time.Time{})
	}
	if out.Ping != "" && out.EditID != "" {
		if err := a.Delete(ctx, out.Address, out.EditID); err != nil {
			a.log.Info("matrix: could not remove the preview a ping replaced", zap.Error(err))
		}
	}
	if out.Kind == gateway.OutReply {
		tctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, _ = a.cli.UserTyping(tctx, room, false, 0) // best effort: typing also times out by itself
		cancel()
	}
	if root != "" {
		a.engage(ctx, room, root)
	}
}

// editWrapper is an m.replace edit: the full new content in m.new_content
// (with the choices, when the edited message offers some) and a short
// fallback for clients without edits. The thread relation stays on the
// original event.
type editWrapper struct {
	MsgType    event.MessageType `json:"msgtype"`
	Body       string            `json:"body"`
	NewContent any               `json:"m.new_content"`
	RelatesTo  *event.RelatesTo  `json:"m.relates_to"`
	Mentions   *event.Mentions   `json:"m.mentions"`
}

func editContent(orig id.EventID, c *event.MessageEventContent, choices map[string]string) editWrapper {
	nc := *c
	nc.RelatesTo = nil
	var inner any = &nc
	if choices != nil {
		inner = choiceMessage{&nc, choices}
	}
	return editWrapper{MsgType: c.MsgType, Body: "* " + cutRunes(c.Body, 50), NewContent: inner,
		RelatesTo: &event.RelatesTo{Type: event.RelReplace, EventID: orig}, Mentions: &event.Mentions{}}
}

func (a *Adapter) edit(ctx context.Context, room id.RoomID, orig id.EventID, c *event.MessageEventContent,
	choices map[string]string, txn string) error {
	_, err := a.post(ctx, room, event.EventMessage, editContent(orig, c, choices), txn)
	return err
}

// Edit implements gateway.Platform. Edits of a streamed preview closer
// together than PreviewEditInterval are skipped: each counts against the
// homeserver's rate limit, a later tick sends a longer text, and the final
// reply replaces the preview through Send anyway.
func (a *Adapter) Edit(ctx context.Context, addr gateway.Address, messageID, text string) error {
	room, _, err := target(addr)
	if err != nil {
		return err
	}
	now := a.cfg.Now()
	last, isPreview := a.previews.get(messageID)
	if isPreview {
		if now.Sub(last) < a.cfg.PreviewEditInterval {
			return nil
		}
		a.previews.touch(messageID, now)
	}
	c := textContent(previewPart(text), "", !isPreview, "")
	return a.edit(ctx, room, id.EventID(messageID), c, nil, a.editTxns.txn(id.EventID(messageID), c.Body))
}

// Delete implements gateway.Deleter by redacting the event.
func (a *Adapter) Delete(ctx context.Context, addr gateway.Address, messageID string) error {
	room, _, err := target(addr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	_, err = a.cli.RedactEvent(ctx, room, id.EventID(messageID), mautrix.ReqRedact{TxnID: txnID(0, 0, "redact", messageID)})
	if errors.Is(err, mautrix.MNotFound) {
		return nil
	}
	a.noteRateLimit(err)
	return mapError("redact", err)
}

// Typing implements gateway.Typer. Typing is room-wide in Matrix; it is
// skipped while the room is rate limited (it is only a hint).
func (a *Adapter) Typing(ctx context.Context, addr gateway.Address) error {
	room, _, err := target(addr)
	if err != nil {
		return err
	}
	if _, cooling := a.cooldown(); cooling || a.rooms.encrypted(room) || a.self() == "" {
		return nil // before whoami the bot's own id (in the URL) is unknown
	}
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	_, err = a.cli.UserTyping(ctx, room, true, 15*time.Second)
	a.noteRateLimit(err)
	return mapError("typing", err)
}

// OpenPlace implements gateway.Platform for /fork: a new thread in near's
// room, rooted at a notice naming it.
func (a *Adapter) OpenPlace(ctx context.Context, near gateway.Address, title string) (gateway.Address, error) {
	room, _, err := target(near)
	if err != nil {
		return gateway.Address{}, fmt.Errorf("matrix: open place: %w", gateway.ErrNoPlace)
	}
	c := textContent("🧵 "+title, "", true, "")
	rootID, err := a.postRetrying(ctx, room, event.EventMessage, c, a.cli.TxnID())
	if err != nil {
		return gateway.Address{}, err
	}
	a.engage(ctx, room, id.EventID(rootID))
	return gateway.Address{Platform: PlatformName, Kind: gateway.LaneThread, ChatID: string(room), TopicID: rootID}, nil
}

// cutRunes cuts s to at most n bytes without splitting a rune.
func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:cutPoint(s, n)] + "…"
}

// sendGrace is how long a send already on the wire may outlive its
// caller's context (as on Telegram and Discord).
const sendGrace = 5 * time.Second

// inFlight gives one send a context that ends sendGrace after ctx does.
func inFlight(ctx context.Context) (context.Context, context.CancelFunc) {
	c, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() { time.AfterFunc(sendGrace, cancel) })
	return c, func() {
		stop()
		cancel()
	}
}
