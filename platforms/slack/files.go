package slack

import (
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"

	"github.com/slack-go/slack"

	"github.com/gatewayd/gatewayd/gateway"
)

// attachmentsOf lists a message's files, each downloaded with the bot
// token by the gateway while it accepts the message (its limits and quota
// apply), so the envelope is acked only once they are on disk. Audio
// clips pass through as they are; the voice feature transcribes by MIME.
func (a *Adapter) attachmentsOf(files []slack.File) []gateway.Attachment {
	out := make([]gateway.Attachment, 0, len(files))
	for _, f := range files {
		if f.ID == "" && f.URLPrivate == "" {
			continue
		}
		file := f
		out = append(out, gateway.Attachment{Name: firstNonEmpty(f.Name, f.Title, f.ID), MIME: f.Mimetype,
			Size: int64(f.Size), Open: func(ctx context.Context) (io.ReadCloser, error) { return a.download(ctx, file) }})
	}
	return out
}

// download fetches a file's bytes. A file shared from another workspace
// names no URL until files.info is asked.
func (a *Adapter) download(ctx context.Context, f slack.File) (io.ReadCloser, error) {
	if f.FileAccess == "check_file_info" || (f.URLPrivateDownload == "" && f.URLPrivate == "") {
		var info *slack.File
		err := a.call(ctx, "files.info", func(ctx context.Context) error {
			var err error
			info, _, _, err = a.api.GetFileInfoContext(ctx, f.ID, 0, 0)
			return err
		})
		if err != nil {
			return nil, err
		}
		f = *info
	}
	u := firstNonEmpty(f.URLPrivateDownload, f.URLPrivate)
	if err := a.mayReceiveToken(u); err != nil {
		return nil, err
	}
	return a.fetch(ctx, u, f.Mimetype)
}

// mayReceiveToken refuses to send the bot token anywhere but Slack's
// file hosts or the configured API host (slack-go's own rule).
func (a *Adapter) mayReceiveToken(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return fmt.Errorf("slack: file url %q: %w", raw, gateway.ErrPermanent)
	}
	api, _ := url.Parse(a.cfg.APIURL) // validated in normalise
	host := strings.ToLower(u.Hostname())
	switch {
	case u.Scheme == api.Scheme && u.Host == api.Host:
		return nil
	case u.Scheme == "https" && (host == "slack.com" || strings.HasSuffix(host, ".slack.com") ||
		strings.HasSuffix(host, ".slack-gov.com")):
		return nil
	}
	return fmt.Errorf("slack: file url host %q is not Slack's; the bot token is not sent there: %w", u.Host, gateway.ErrPermanent)
}

// fetch GETs a file with the bot token. Slack answers a request it will
// not serve with its sign-in page (HTML, or a redirect to ?redir=), which
// must not be stored as the file.
func (a *Adapter) fetch(ctx context.Context, u, fileMIME string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("slack: download: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+a.cfg.BotToken)
	resp, err := a.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("slack: download: %w", err)
	}
	ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		resp.Body.Close()
		return nil, mapError("download", &slack.RateLimitedError{RetryAfter: retryAfter(resp)})
	case resp.StatusCode != http.StatusOK:
		resp.Body.Close()
		return nil, fmt.Errorf("slack: download: HTTP %d", resp.StatusCode)
	case resp.Request.URL.Query().Has("redir"), ct == "text/html" && !strings.Contains(fileMIME, "html"):
		resp.Body.Close()
		return nil, fmt.Errorf("slack: download: Slack answered with its sign-in page (does the app have files:read?): %w", gateway.ErrPermanent)
	}
	return resp.Body, nil
}
