package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/gatewayd/gatewayd/gateway"
)

// attachmentsOf lists the files of m the agent is given: the largest size
// of a photo, a document, voice and audio, a video note and a static
// sticker (an image). Each is downloaded by the gateway while it accepts
// the message, so the update is confirmed only once they are on disk.
func (a *Adapter) attachmentsOf(m *models.Message) []gateway.Attachment {
	var out []gateway.Attachment
	add := func(fileID, name, mime string, size int64) {
		out = append(out, gateway.Attachment{Name: name, MIME: mime, Size: size,
			Open: func(ctx context.Context) (io.ReadCloser, error) { return a.download(ctx, fileID) }})
	}
	if len(m.Photo) > 0 {
		best := m.Photo[0]
		for _, p := range m.Photo[1:] {
			if p.Width*p.Height > best.Width*best.Height {
				best = p
			}
		}
		add(best.FileID, "photo.jpg", "image/jpeg", int64(best.FileSize))
	}
	if d := m.Document; d != nil {
		add(d.FileID, orName(d.FileName, "document"), d.MimeType, d.FileSize)
	}
	if v := m.Voice; v != nil {
		add(v.FileID, "voice.ogg", v.MimeType, v.FileSize)
	}
	if au := m.Audio; au != nil {
		add(au.FileID, orName(au.FileName, "audio"), au.MimeType, au.FileSize)
	}
	if vn := m.VideoNote; vn != nil {
		add(vn.FileID, "video_note.mp4", "video/mp4", int64(vn.FileSize))
	}
	if s := m.Sticker; s != nil && !s.IsAnimated && !s.IsVideo {
		add(s.FileID, "sticker.webp", "image/webp", int64(s.FileSize))
	}
	return out
}

func orName(name, fallback string) string {
	if strings.TrimSpace(name) == "" {
		return fallback
	}
	return name
}

// download asks getFile for the file's path, then fetches
// <api_url>/file/bot<token>/<file_path>. No error it returns carries the
// token: the URL is never part of one.
func (a *Adapter) download(ctx context.Context, fileID string) (io.ReadCloser, error) {
	f, err := a.bot.GetFile(ctx, &bot.GetFileParams{FileID: fileID})
	if err != nil {
		return nil, fmt.Errorf("telegram: getFile: %s", redact(err.Error(), a.cfg.Token))
	}
	if f.FilePath == "" {
		return nil, errors.New("telegram: getFile returned no file path")
	}
	url := strings.TrimRight(a.cfg.APIURL, "/") + "/file/bot" + a.cfg.Token + "/" + strings.TrimLeft(f.FilePath, "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, errors.New("telegram: download: bad file path")
	}
	resp, err := a.cfg.HTTPClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("telegram: download %s: %s", f.FilePath, redact(err.Error(), a.cfg.Token))
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		return nil, fmt.Errorf("telegram: download %s: HTTP %d", f.FilePath, resp.StatusCode)
	}
	return resp.Body, nil
}
