package slack

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/slack-go/slack"

	"github.com/gatewayd/gatewayd/gateway"
)

// transientCodes are Slack's ok:false error codes that a later try may
// not get. Every other code is a refusal retrying cannot fix
// (access_denied, channel_not_found, …): a code Slack adds later must not
// make a retry loop forever.
var transientCodes = map[string]bool{
	"ratelimited": true, "internal_error": true, "service_unavailable": true, "request_timeout": true,
	"fatal_error": true,
}

// mapError turns slack-go's errors into what the gateway branches on: a
// 429 becomes *gateway.RetryAfterError (at least a second: slack-go reads
// whole seconds, and 0 would spin); an ok:false answer wraps
// gateway.ErrPermanent unless its code is in transientCodes; other 4xx
// are permanent too; 5xx and network errors stay transient.
func mapError(op string, err error) error {
	if err == nil {
		return nil
	}
	var rl *slack.RateLimitedError
	if errors.As(err, &rl) {
		return &gateway.RetryAfterError{After: max(rl.RetryAfter, time.Second), Err: fmt.Errorf("slack: %s: %w", op, err)}
	}
	var se slack.SlackErrorResponse
	if errors.As(err, &se) && !transientCodes[se.Err] {
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
