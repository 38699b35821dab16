package slack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/gatewayd/gatewayd/gateway"
)

// permanentCodes are Slack's error codes that retrying cannot fix.
var permanentCodes = map[string]bool{
	"channel_not_found": true, "not_in_channel": true, "is_archived": true, "msg_too_long": true,
	"no_text": true, "invalid_blocks": true, "msg_blocks_too_long": true, "invalid_arguments": true,
	"missing_scope": true, "restricted_action": true, "not_authed": true, "invalid_auth": true,
	"token_revoked": true, "account_inactive": true, "thread_not_found": true, "message_not_found": true,
	"cant_update_message": true, "cant_delete_message": true, "edit_window_closed": true,
	"file_not_found": true, "user_not_found": true, "not_allowed_token_type": true, "invalid_metadata_format": true,
	"invalid_metadata_schema": true, "metadata_too_large": true, "too_many_attachments": true,
}

// mapError turns slack-go's errors into what the gateway branches on: a
// 429 becomes *gateway.RetryAfterError (at least a second: slack-go reads
// whole seconds, and 0 would spin); refusals that cannot heal and other
// 4xx wrap gateway.ErrPermanent; 5xx and network errors stay transient.
func mapError(op string, err error) error {
	if err == nil {
		return nil
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return &gateway.RetryAfterError{After: max(rl.RetryAfter, time.Second), Err: fmt.Errorf("slack: %s: %w", op, err)}
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && permanentCodes[se.Err] {
		return fmt.Errorf("slack: %s: %w: %w", op, err, gateway.ErrPermanent)
	}
	var sc slack.StatusCodeError
	if errors.As(err, &sc) && sc.Code >= 400 && sc.Code < 500 && sc.Code != 429 {
		return fmt.Errorf("slack: %s: %w: %w", op, err, gateway.ErrPermanent)
	}
	return fmt.Errorf("slack: %s: %w", op, err)
}

// slackCode is Slack's error code in err, or "".
func slackCode(err error) string {
	var se slack.SlackErrorResponse
	if errors.As(err, &se) {
		return se.Err
	}
	return ""
}

// call runs one Web API call of method under the limiter and maps its
// error.
func (a *Adapter) call(ctx context.Context, method string, fn func(ctx context.Context) error) error {
	return a.callIn(ctx, method, "", fn)
}

// callIn is call for a method whose limit is per channel.
func (a *Adapter) callIn(ctx context.Context, method, channel string, fn func(ctx context.Context) error) error {
	if err := a.limits.wait(ctx, method, channel); err != nil {
		return err
	}
	err := mapError(method, fn(ctx))
	a.limits.observe(method, err)
	return err
}
