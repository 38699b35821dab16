package matrix

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/gatewayd/gatewayd/gateway"
)

// attachmentsOf lists the file of an m.file/m.image/m.audio/m.video
// message; nil for text. Downloads go through the homeserver with the
// bearer token, never through a URL handed to anyone else.
func (a *Adapter) attachmentsOf(c *event.MessageEventContent) []gateway.Attachment {
	switch c.MsgType {
	case event.MsgFile, event.MsgImage, event.MsgAudio, event.MsgVideo:
	default:
		return nil
	}
	name := c.FileName
	if name == "" {
		name = c.Body
	}
	att := gateway.Attachment{Name: name}
	if c.Info != nil {
		att.MIME, att.Size = c.Info.MimeType, int64(c.Info.Size)
	}
	if c.File != nil {
		att.Err = fmt.Errorf("matrix: %s is end-to-end encrypted media, which gatewayd cannot read", name)
		return []gateway.Attachment{att}
	}
	uri, err := id.ParseContentURI(string(c.URL))
	if err == nil && !validContentURI(uri) {
		err = errors.New("server name or media id outside the spec's characters")
	}
	if err != nil {
		att.Err = fmt.Errorf("matrix: %s has no usable media URL: %w", name, err)
		return []gateway.Attachment{att}
	}
	att.Open = func(ctx context.Context) (io.ReadCloser, error) { return a.download(ctx, uri) }
	return []gateway.Attachment{att}
}

// download fetches media through the authenticated v1 path, or the legacy
// one on a homeserver without authenticated media.
func (a *Adapter) download(ctx context.Context, uri id.ContentURI) (io.ReadCloser, error) {
	a.mu.Lock()
	legacy := a.legacyMedia
	a.mu.Unlock()
	// A stalled download must not hold up whoever reads it (the inbound
	// path): the whole transfer, body included, has a deadline.
	ctx, cancel := context.WithTimeout(ctx, mediaTimeout)
	var resp *http.Response
	var err error
	if legacy {
		_, resp, err = a.cli.MakeFullRequestWithResp(ctx, mautrix.FullRequest{Method: http.MethodGet,
			URL: a.cli.BuildURL(mautrix.MediaURLPath{"v3", "download", uri.Homeserver, uri.FileID}), DontReadResponse: true})
	} else {
		resp, err = a.cli.Download(ctx, uri)
	}
	if err != nil {
		cancel()
		return nil, mapError("download", err)
	}
	return cancelOnClose{resp.Body, cancel}, nil
}

// mediaTimeout bounds one media download or upload, body included.
const mediaTimeout = 2 * time.Minute

// cancelOnClose ends a download's context when its body is closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (c cancelOnClose) Close() error {
	err := c.ReadCloser.Close()
	c.cancel()
	return err
}

// SendFile implements gateway.Platform: upload, then post the media
// event in the lane (in the thread for a thread lane). The upload itself
// is not idempotent — a retried row uploads again, leaving an unused
// copy — but the post carries the row's transaction id, so it is shown once.
func (a *Adapter) SendFile(ctx context.Context, out gateway.Outbound) (string, error) {
	if len(out.SentParts) > 0 {
		return out.SentParts[len(out.SentParts)-1], nil
	}
	room, root, err := target(out.Address)
	if err != nil {
		return "", err
	}
	if out.File == nil {
		return "", fmt.Errorf("matrix: send file: no file: %w", gateway.ErrPermanent)
	}
	if d, cooling := a.cooldown(); cooling { // the post would wait anyway: do not upload twice
		return "", &gateway.RetryAfterError{After: d, Err: errors.New("matrix: send file: rate limited")}
	}
	f, err := out.File.Open()
	if err != nil {
		return "", fmt.Errorf("matrix: send file: %v: %w", err, gateway.ErrPermanent)
	}
	defer f.Close()
	uctx, cancel := context.WithTimeout(ctx, mediaTimeout)
	defer cancel()
	up, err := a.cli.UploadMedia(uctx, mautrix.ReqUploadMedia{Content: f, ContentLength: out.File.Size,
		ContentType: out.File.MIME, FileName: out.File.Name})
	if err != nil {
		return "", mapError("upload", err)
	}
	c := &event.MessageEventContent{MsgType: mediaType(out.File), Body: out.File.Name, FileName: out.File.Name,
		URL: up.ContentURI.CUString(), Info: &event.FileInfo{MimeType: out.File.MIME, Size: int(out.File.Size)},
		Mentions: &event.Mentions{}}
	if strings.TrimSpace(out.Text) != "" {
		c.Body = out.Text // since spec v1.10 the body is the caption when there is one
	}
	relate(c, root, "")
	eid, err := a.post(ctx, room, event.EventMessage, c, a.sendTxn(out.ID, 0, "file", out.File.Name))
	if err != nil {
		return "", err
	}
	if err := out.RecordLastPart(ctx, 0, eid); err != nil {
		return "", fmt.Errorf("matrix: record file of outbox %d: %w", out.ID, err)
	}
	return eid, nil
}

func mediaType(f *gateway.SentFile) event.MessageType {
	switch {
	case f.IsImage || strings.HasPrefix(f.MIME, "image/"):
		return event.MsgImage
	case strings.HasPrefix(f.MIME, "audio/"):
		return event.MsgAudio
	case strings.HasPrefix(f.MIME, "video/"):
		return event.MsgVideo
	}
	return event.MsgFile
}

// validContentURI: an mxc URI's server name and media id use only the
// characters the spec allows, so neither can steer the download URL
// (path segments, queries) anywhere but the media endpoint.
func validContentURI(u id.ContentURI) bool {
	return charsIn(u.Homeserver, func(r rune) bool {
		return isAlnum(r) || strings.ContainsRune(".-:[]", r)
	}) && charsIn(u.FileID, func(r rune) bool { return isAlnum(r) || r == '_' || r == '-' })
}

func charsIn(s string, ok func(rune) bool) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for _, r := range s {
		if !ok(r) {
			return false
		}
	}
	return true
}

func isAlnum(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9'
}
