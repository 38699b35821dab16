package api

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/gatewayd/gatewayd/files"
)

// The spool is shared by every upload in progress: up to MaxFiles files at
// MaxFileBytes each per request, times MaxConnections requests, is far
// more disk than a host should lose to people who have not finished
// sending. MaxSpoolBytes bounds them together; a request that would go
// past it is answered 503 with Retry-After, and what the others spooled is
// untouched.

// spoolRetryAfter is the Retry-After of a 503 for a full spool, in
// seconds: uploads in progress take a while to be stored and let go.
const spoolRetryAfter = 5

// defaultMaxSpool is MaxSpoolBytes's default: four requests with every
// file at its limit.
func defaultMaxSpool(maxFile int64) int64 { return 4 * MaxFiles * maxFile }

// spoolBudget counts the bytes reserved in the spool by all requests.
type spoolBudget struct {
	max  int64
	mu   sync.Mutex
	used int64
}

// reserve takes n bytes if they fit.
func (b *spoolBudget) reserve(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *spoolBudget) release(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// inUse is how many bytes are reserved now.
func (b *spoolBudget) inUse() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// spoolFullError reports a request the spool cannot take: Alone when the
// request is larger than the whole spool (answered 413, as no retry can
// succeed), otherwise because of the other uploads in progress (503).
type spoolFullError struct {
	Max   int64
	Alone bool
}

func (e *spoolFullError) Error() string {
	return "api: the upload spool of " + files.FormatSize(e.Max) + " is full"
}

// full is the error for a request that wanted want bytes in all.
func (b *spoolBudget) full(want int64) error {
	return &spoolFullError{Max: b.max, Alone: want > b.max}
}

// grow makes the upload's reservation cover total spooled bytes, taking
// only what it does not hold yet.
func (u *upload) grow(total int64) error {
	if total <= u.reserved {
		return nil
	}
	if !u.budget.reserve(total - u.reserved) {
		return u.budget.full(total)
	}
	u.reserved = total
	return nil
}

// reserveBody reserves a declared body's length at once, up to the most a
// request spools (MaxFiles files of maxFile bytes: the text fields and the
// framing are not spooled), so a request the spool cannot take is refused
// before its bytes are read and one it can take never fails half-way for
// the others. A body of unknown length (chunked) reserves as it is spooled.
func (u *upload) reserveBody(contentLength, maxFile int64) error {
	if contentLength <= 0 {
		return nil
	}
	return u.grow(min(contentLength, MaxFiles*maxFile))
}

// spoolWriter writes a part to its spool file within the upload's
// reservation.
type spoolWriter struct {
	f io.Writer
	u *upload
}

func (w spoolWriter) Write(p []byte) (int, error) {
	if err := w.u.grow(w.u.spooled + int64(len(p))); err != nil {
		return 0, err
	}
	n, err := w.f.Write(p)
	w.u.spooled += int64(n)
	return n, err
}

// spoolFailure answers an upload the spool cannot take, or reports false
// for any other error.
func spoolFailure(err error) (int, string, bool) {
	var full *spoolFullError
	if !errors.As(err, &full) {
		return 0, "", false
	}
	if full.Alone {
		return http.StatusRequestEntityTooLarge, fmt.Sprintf("the upload is larger than the %s the upload spool holds",
			files.FormatSize(full.Max)), true
	}
	return http.StatusServiceUnavailable, fmt.Sprintf("too many uploads in progress: the %s upload spool is full; try again in %d seconds",
		files.FormatSize(full.Max), spoolRetryAfter), true
}

// retryAfterSpool is the Retry-After value of a full spool.
var retryAfterSpool = strconv.Itoa(spoolRetryAfter)
