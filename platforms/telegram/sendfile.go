package telegram

import (
	"context"
	"fmt"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/gateway"
)

// Files out: an image under maxPhotoBytes goes as sendPhoto
// (Telegram shows it inline), anything else as sendDocument; the caption
// is cut to Telegram's 1024 units.
const (
	maxPhotoBytes   = 10 << 20
	maxCaptionUnits = 1024
)

// SendFile implements gateway.Platform. The upload is one part: a retry
// of a row whose upload was recorded sends nothing again.
func (a *Adapter) SendFile(ctx context.Context, out gateway.Outbound) (string, error) {
	if len(out.SentParts) > 0 {
		return out.SentParts[len(out.SentParts)-1], nil
	}
	if out.File == nil {
		return "", fmt.Errorf("telegram: file message without a file: %w", gateway.ErrPermanent)
	}
	t, err := targetOf(out.Address)
	if err != nil {
		return "", err
	}
	// Through the lane's directory: a link the lane's agent put in the
	// snapshot's place (or out/'s) is not followed out of it.
	f, err := out.File.Open()
	if err != nil {
		// The snapshot is gone (state dir cleaned) or was replaced by a
		// link: retrying cannot help.
		return "", fmt.Errorf("telegram: open %s: %v: %w", out.File.Name, err, gateway.ErrPermanent)
	}
	defer f.Close()
	caption := cutUnits(out.Text, maxCaptionUnits)
	upload := &models.InputFileUpload{Filename: out.File.Name, Data: f}
	var reply *models.ReplyParameters
	if id, ok := parseMessageID(out.ReplyTo); ok {
		reply = &models.ReplyParameters{MessageID: id, AllowSendingWithoutReply: true}
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	sctx, done := inFlight(ctx)
	defer done()
	var m *models.Message
	if out.File.IsImage && out.File.Size < maxPhotoBytes {
		m, err = a.bot.SendPhoto(sctx, &bot.SendPhotoParams{ChatID: t.chat, MessageThreadID: t.sendThread,
			Photo: upload, Caption: caption, ReplyParameters: reply})
	} else {
		m, err = a.bot.SendDocument(sctx, &bot.SendDocumentParams{ChatID: t.chat, MessageThreadID: t.sendThread,
			Document: upload, Caption: caption, ReplyParameters: reply})
	}
	if err != nil {
		return "", a.classify(err, out.Address)
	}
	pid := messageID(t.chat, m.ID)
	if err := out.RecordLastPart(ctx, 0, pid); err != nil {
		return "", fmt.Errorf("telegram: record upload of outbox %d: %w", out.ID, err)
	}
	return pid, nil
}

// cutUnits cuts s to at most n UTF-16 units, at a rune boundary.
func cutUnits(s string, n int) string {
	if utf16Len(s) <= n {
		return s
	}
	units := 0
	for i, r := range s {
		l := utf16Len(string(r))
		if units+l > n {
			return s[:i]
		}
		units += l
	}
	return s
}
