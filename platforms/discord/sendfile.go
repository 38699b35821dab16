package discord

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/bwmarrin/discordgo"

	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/gateway"
)

// Files out: a file goes as an attachment of a message whose
// content is the caption, up to the server's upload limit (by its boost
// tier; 10 MiB without boosts and in DMs). A larger one is answered with a
// message saying so, since retrying cannot help.

// Upload limits by boost tier.
const (
	defaultUploadBytes = 10 << 20
	tier2UploadBytes   = 50 << 20
	tier3UploadBytes   = 100 << 20
)

// uploadLimit is the largest attachment the channel's server takes.
func (a *Adapter) uploadLimit(ctx context.Context, channelID string) int64 {
	info, err := a.channel(ctx, channelID)
	if err != nil || info.GuildID == "" {
		return defaultUploadBytes
	}
	a.channels.mu.RLock()
	tier := a.channels.tiers[info.GuildID]
	a.channels.mu.RUnlock()
	switch tier {
	case discordgo.PremiumTier2:
		return tier2UploadBytes
	case discordgo.PremiumTier3:
		return tier3UploadBytes
	}
	return defaultUploadBytes
}

// tooLargeText tells the lane a file could not be attached.
func tooLargeText(name string, size, limit int64) string {
	return fmt.Sprintf("(file: %s) could not be attached: it is %s, over this server's %s upload limit.",
		name, files.FormatSize(size), files.FormatSize(limit))
}

// SendFile implements gateway.Platform. The upload is part 0 of the row,
// sent with the row's nonce, so a retry whose answer was lost does not
// post it twice.
func (a *Adapter) SendFile(ctx context.Context, out gateway.Outbound) (string, error) {
	if len(out.SentParts) > 0 {
		return out.SentParts[len(out.SentParts)-1], nil
	}
	if out.File == nil {
		return "", fmt.Errorf("discord: file message without a file: %w", gateway.ErrPermanent)
	}
	target, err := targetChannel(out.Address)
	if err != nil {
		return "", err
	}
	if limit := a.uploadLimit(ctx, target); out.File.Size > limit {
		notice := out
		notice.File, notice.Kind = nil, gateway.OutNotice
		notice.Text = tooLargeText(out.File.Name, out.File.Size, limit)
		if out.Text != "" {
			notice.Text = out.Text + "\n" + notice.Text
		}
		return a.send(ctx, notice, nil)
	}
	// Through the lane's directory: a link the lane's agent put in the
	// snapshot's place (or out/'s) is not followed out of it.
	f, err := out.File.Open()
	if err != nil {
		return "", fmt.Errorf("discord: open %s: %v: %w", out.File.Name, err, gateway.ErrPermanent)
	}
	defer f.Close()
	caption := out.Text
	if r := []rune(caption); len(r) > maxMessageRunes {
		caption = string(r[:maxMessageRunes])
	}
	msg := &discordgo.MessageSend{
		Content:         caption,
		AllowedMentions: &discordgo.MessageAllowedMentions{Parse: []discordgo.AllowedMentionType{discordgo.AllowedMentionTypeUsers}},
	}
	if out.ReplyTo != "" && out.ReplyTo != target && out.ReplyTo != out.Address.TopicID {
		fail := false
		msg.Reference = &discordgo.MessageReference{MessageID: out.ReplyTo, FailIfNotExists: &fail}
	}
	nonce := partNonce(out.ID, 0, "file:"+out.File.ID)
	contentType, body, err := discordgo.MultipartBodyWithJSON(nonceMessage{MessageSend: msg, Nonce: nonce, EnforceNonce: nonce != ""},
		[]*discordgo.File{{Name: out.File.Name, ContentType: out.File.MIME, Reader: f}})
	if err != nil {
		return "", fmt.Errorf("discord: encode upload: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	sctx, done := inFlight(ctx)
	defer done()
	endpoint := discordgo.EndpointChannelMessages(target)
	resp, err := a.session.RequestRaw(http.MethodPost, endpoint, contentType, body, endpoint, 0, discordgo.WithContext(sctx))
	if err != nil {
		return "", mapError("upload", err)
	}
	var m discordgo.Message
	if err := json.Unmarshal(resp, &m); err != nil {
		return "", fmt.Errorf("discord: decode message: %w", err)
	}
	if err := out.RecordPart(ctx, 0, m.ID); err != nil {
		return "", fmt.Errorf("discord: record upload of outbox %d: %w", out.ID, err)
	}
	return m.ID, nil
}
