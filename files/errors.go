package files

import (
	"errors"
	"fmt"
)

// ErrInvalid reports a call the package cannot act on: an empty lane or
// message id.
var ErrInvalid = errors.New("files: invalid argument")

// TooLargeError reports a file over a size limit. Errors from Save and
// CopyOut stop reading one byte past the limit, so Got is a lower bound
// there; from ResolveOutbound it is the file's size.
type TooLargeError struct {
	Limit int64 // bytes allowed
	Got   int64 // bytes seen
}

func (e *TooLargeError) Error() string {
	return "files: file is larger than the " + FormatSize(e.Limit) + " limit"
}

// QuotaError reports a lane whose files cannot fit its quota even after
// pruning every message directory not in use.
type QuotaError struct {
	Quota int64 // the lane's quota in bytes
	Kept  int64 // bytes the lane would still hold: messages in use and the new file
}

func (e *QuotaError) Error() string {
	return fmt.Sprintf("files: lane quota of %s cannot be met: %s is in use", FormatSize(e.Quota), FormatSize(e.Kept))
}

// Reasons a path given to send_file is refused, worded for the agent.
var (
	ErrOutside    = errors.New("outside the project directory")
	ErrNotRegular = errors.New("not a regular file")
	ErrNotFound   = errors.New("no such file")
	ErrUnreadable = errors.New("cannot be read")
)

// RefusedError is ResolveOutbound's refusal. Reason is what the agent is
// told; it never names a path, so a refusal cannot reveal what lies outside
// the allowed roots. Err is one of ErrOutside, ErrNotRegular, ErrNotFound,
// ErrUnreadable or a *TooLargeError, for errors.Is and errors.As.
type RefusedError struct {
	Reason string
	Err    error
}

func (e *RefusedError) Error() string { return "files: cannot send: " + e.Reason }
func (e *RefusedError) Unwrap() error { return e.Err }

// refuse builds a RefusedError whose reason is the cause's own text.
func refuse(cause error) *RefusedError { return &RefusedError{Reason: cause.Error(), Err: cause} }

// FormatSize writes a byte count the way limits are configured: "20 MiB"
// for whole mebibytes, "1500 bytes" otherwise.
func FormatSize(n int64) string {
	units := []struct {
		size int64
		name string
	}{{1 << 30, "GiB"}, {1 << 20, "MiB"}, {1 << 10, "KiB"}}
	for _, u := range units {
		if n >= u.size && n%u.size == 0 {
			return fmt.Sprintf("%d %s", n/u.size, u.name)
		}
	}
	return fmt.Sprintf("%d bytes", n)
}
