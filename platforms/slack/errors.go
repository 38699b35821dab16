package slack

import (
	"context"
	"errors"
	"fmt"
	"sync"
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

// limiter keeps the adapter under Slack's per-method limits: after a 429
// on a method every call of it waits out Retry-After (Slack's limits are
// per method and workspace, so one lane's 429 is every lane's), and
// chat.update (tier 3, about 50 a minute) draws from a token bucket.
type limiter struct {
	now    func() time.Time
	mu     sync.Mutex
	paused map[string]time.Time // method → until
	// the chat.update bucket
	tokens   float64
	burst    float64
	perToken time.Duration
	refilled time.Time
}

func newLimiter(now func() time.Time, updatesPerMinute int) *limiter {
	return &limiter{now: now, paused: map[string]time.Time{}, tokens: 5, burst: 5,
		perToken: time.Minute / time.Duration(updatesPerMinute), refilled: now()}
}

// wait blocks until method may be called. When the wait would outlast
// ctx's deadline it returns a RetryAfterError at once, so the outbox
// reschedules instead of holding a worker.
func (l *limiter) wait(ctx context.Context, method string) error {
	d := l.reserve(method)
	if d <= 0 {
		return nil
	}
	if dl, ok := ctx.Deadline(); ok && l.now().Add(d).After(dl) {
		l.refund(method)
		return &gateway.RetryAfterError{After: d, Err: fmt.Errorf("slack: %s: rate limited", method)}
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// reserve takes the method's turn and says how long to wait for it.
func (l *limiter) reserve(method string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	wait := l.paused[method].Sub(now)
	if method != "chat.update" {
		return wait
	}
	l.tokens = min(l.burst, l.tokens+float64(now.Sub(l.refilled))/float64(l.perToken))
	l.refilled = now
	l.tokens--
	if l.tokens < 0 {
		wait = max(wait, time.Duration(-l.tokens*float64(l.perToken)))
	}
	return wait
}

// refund gives back a chat.update token reserved but not used.
func (l *limiter) refund(method string) {
	if method != "chat.update" {
		return
	}
	l.mu.Lock()
	l.tokens = min(l.burst, l.tokens+1)
	l.mu.Unlock()
}

// observe pauses method after a 429.
func (l *limiter) observe(method string, err error) {
	var ra *gateway.RetryAfterError
	if !errors.As(err, &ra) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if until := l.now().Add(ra.After); until.After(l.paused[method]) {
		l.paused[method] = until
	}
}

// call runs one Web API call of method under the limiter and maps its
// error.
func (a *Adapter) call(ctx context.Context, method string, fn func(ctx context.Context) error) error {
	if err := a.limits.wait(ctx, method); err != nil {
		return err
	}
	err := mapError(method, fn(ctx))
	a.limits.observe(method, err)
	return err
}
