package matrix

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"maunium.net/go/mautrix"

	"github.com/gatewayd/gatewayd/gateway"
)

const (
	defaultRetryAfter = 5 * time.Second
	maxRetryAfter     = 10 * time.Minute
)

// retryAfter reads how long a rate-limited answer (429 or M_LIMIT_EXCEEDED)
// asks us to wait: the larger of the Retry-After header and the body's
// retry_after_ms (mautrix reads only the header). ok is false for any other
// error.
func retryAfter(err error) (time.Duration, bool) {
	var he mautrix.HTTPError
	if !errors.As(err, &he) {
		return 0, false
	}
	limited := errors.Is(err, mautrix.MLimitExceeded) || (he.Response != nil && he.Response.StatusCode == http.StatusTooManyRequests)
	if !limited {
		return 0, false
	}
	var d time.Duration
	if he.RespError != nil {
		if ms, ok := he.RespError.ExtraData["retry_after_ms"].(float64); ok && ms > 0 {
			d = time.Duration(ms) * time.Millisecond
		}
	}
	if he.Response != nil {
		if s, err := strconv.Atoi(he.Response.Header.Get("Retry-After")); err == nil && s > 0 {
			d = max(d, time.Duration(s)*time.Second)
		}
	}
	if d <= 0 {
		d = defaultRetryAfter
	}
	return min(d, maxRetryAfter), true
}

// tokenRefused: only a new access token fixes this answer.
func tokenRefused(err error) bool {
	return errors.Is(err, mautrix.MUnknownToken) || errors.Is(err, mautrix.MMissingToken)
}

// mapError turns a mautrix error into what the outbox acts on: a rate
// limit becomes a RetryAfterError, an answer no retry can change wraps
// ErrPermanent, anything else (5xx, network) is retried with backoff.
func mapError(op string, err error) error {
	if err == nil {
		return nil
	}
	if d, ok := retryAfter(err); ok {
		return &gateway.RetryAfterError{After: d, Err: fmt.Errorf("matrix: %s: %w", op, err)}
	}
	if tokenRefused(err) {
		return fmt.Errorf("matrix: %s: access token rejected (check matrix.access_token): %v: %w", op, err, gateway.ErrPermanent)
	}
	var he mautrix.HTTPError
	if errors.As(err, &he) && he.Response != nil {
		switch he.Response.StatusCode {
		case http.StatusBadRequest, http.StatusForbidden, http.StatusNotFound, http.StatusRequestEntityTooLarge:
			return fmt.Errorf("matrix: %s: %v: %w", op, err, gateway.ErrPermanent)
		}
	}
	return fmt.Errorf("matrix: %s: %w", op, err)
}
