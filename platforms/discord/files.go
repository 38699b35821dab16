package discord

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/bwmarrin/discordgo"

	"github.com/gatewayd/gatewayd/gateway"
)

// attachmentsOf lists every attachment of m, each downloaded from its URL
// by the gateway while it accepts the message, so the channel's cursor
// moves past the message only once they are on disk.
func (a *Adapter) attachmentsOf(m *discordgo.Message) []gateway.Attachment {
	out := make([]gateway.Attachment, 0, len(m.Attachments))
	for _, at := range m.Attachments {
		if at == nil || at.URL == "" {
			continue
		}
		url := at.URL
		out = append(out, gateway.Attachment{Name: at.Filename, MIME: at.ContentType, Size: int64(at.Size),
			Open: func(ctx context.Context) (io.ReadCloser, error) { return a.download(ctx, url) }})
	}
	return out
}

// download fetches an attachment URL with the session's client (which
// sends it to Config.APIURL when that is set).
func (a *Adapter) download(ctx context.Context, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("discord: download attachment: %w", err)
	}
	resp, err := a.session.Client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("discord: download attachment: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("discord: download attachment: HTTP %d", resp.StatusCode)
	}
	return resp.Body, nil
}
