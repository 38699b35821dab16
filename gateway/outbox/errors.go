package outbox

import (
	"errors"
	"fmt"
	"time"
)

// What a platform's send may answer besides success; the deliverer
// decides from it whether a row is retried, held or given up. The gateway
// re-exports these names for the adapters (gateway.ErrDeferred, ...).

// RetryAfterError is returned by Send and Edit when the platform asks us to
// slow down; the outbox retries after the given delay.
type RetryAfterError struct {
	After time.Duration
	Err   error
}

func (e *RetryAfterError) Error() string {
	return fmt.Sprintf("rate limited, retry after %s: %v", e.After, e.Err)
}

func (e *RetryAfterError) Unwrap() error { return e.Err }

// RetryAfter is the wait the platform asked for: a feature reads it
// through ext.RetryAfter without naming this type.
func (e *RetryAfterError) RetryAfter() time.Duration { return e.After }

// ErrDeferred is returned by Send when the platform took the message but
// nobody has received it yet (the API lane with no request open on the
// lane). The outbox keeps the row held: not retried on a timer and not
// holding back the lane's later rows, until the platform reports it through
// the DeliveryReporter it was given.
var ErrDeferred = errors.New("gateway: delivery deferred until the lane has a listener")

// ErrPermanent marks a send failure that retrying cannot fix (chat not
// found, thread deleted, forbidden). Wrap it: fmt.Errorf("...: %w", ErrPermanent).
var ErrPermanent = errors.New("permanent delivery failure")

// NoPlatformError is a Transport's answer for a row whose platform does
// not run here: the row fails at once, and no send is counted.
type NoPlatformError struct {
	Platform string
}

func (e *NoPlatformError) Error() string { return fmt.Sprintf("no platform %q", e.Platform) }
