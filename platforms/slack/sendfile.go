package slack

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/slack-go/slack"

	"github.com/gatewayd/gatewayd/gateway"
)

// SendFile implements gateway.Platform: the external upload flow
// (getUploadURLExternal, the bytes, completeUploadExternal) shares the
// file into the lane's thread with the caption as its comment. Slack
// returns no message ts for it, so the file's id is the part's id. Slack
// has no idempotency key here: a crash between the upload and the record
// uploads it again (Discord without a nonce has the same window).
func (a *Adapter) SendFile(ctx context.Context, out gateway.Outbound) (string, error) {
	if len(out.SentParts) > 0 {
		return out.SentParts[len(out.SentParts)-1], nil
	}
	if out.File == nil {
		return "", fmt.Errorf("slack: file message without a file: %w", gateway.ErrPermanent)
	}
	channel, thread, err := target(out.Address)
	if err != nil {
		return "", err
	}
	if out.File.Size <= 0 {
		return "", fmt.Errorf("slack: %s is empty; Slack takes no empty file: %w", out.File.Name, gateway.ErrPermanent)
	}
	// Through the lane's directory: a link the lane's agent put in the
	// snapshot's place is not followed out of it.
	f, err := out.File.Open()
	if err != nil {
		return "", fmt.Errorf("slack: open %s: %v: %w", out.File.Name, err, gateway.ErrPermanent)
	}
	defer f.Close()
	params := slack.UploadFileParameters{Reader: f, FileSize: int(out.File.Size), Filename: out.File.Name,
		Title: out.File.Name, Channel: channel, ThreadTimestamp: thread}
	if out.Text != "" {
		params.InitialComment = cutRunes(toMrkdwn(out.Text), maxPartRunes)
	}
	var sum *slack.FileSummary
	err = a.call(ctx, "files.upload", func(ctx context.Context) error {
		var err error
		sum, err = a.api.UploadFileContext(ctx, params)
		return err
	})
	if err != nil {
		return "", err
	}
	a.typing.posted(channel, thread)
	if err := out.RecordLastPart(ctx, 0, sum.ID); err != nil {
		return "", fmt.Errorf("slack: record upload of outbox %d: %w", out.ID, err)
	}
	return sum.ID, nil
}

// retryAfter reads a 429's Retry-After (whole seconds); 1 s when absent.
func retryAfter(resp *http.Response) time.Duration {
	n, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || n < 1 {
		return time.Second
	}
	return time.Duration(n) * time.Second
}
