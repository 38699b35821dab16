package codex

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors callers branch on. Errors returned by the client wrap one
// of these (or an *RPCError whose Is maps to one of them), so errors.Is works.
var (
	// ErrThreadLost: the app-server refused to resume the thread ("no
	// rollout found", "invalid session id", "is archived"). EnsureThread
	// handles it by starting a new thread and reporting OutcomeReplaced.
	ErrThreadLost = errors.New("codex: thread lost")
	// ErrStaleWriter: another live process holds the thread's writer lock
	// (codex allows one writer per thread): the Codex CLI's `codex
	// resume`, the Desktop app, an IDE or another app-server on the same
	// CODEX_HOME, or an orphan of ours. codex answers -32600 "thread <id>
	// already has an active writer" and names no holder. The thread is not
	// lost: it can be read and forked meanwhile, and resumed once the
	// holder unsubscribes from it or exits.
	ErrStaleWriter = errors.New("codex: thread has another active writer")
	// ErrProcessDied: the app-server exited or was restarted while the call
	// was pending.
	ErrProcessDied = errors.New("codex: app-server process died")
	// ErrTimeout: a call exceeded its deadline (handshake, thread/start,
	// thread/resume, or the turn watchdog's interrupt went unanswered).
	ErrTimeout = errors.New("codex: timeout")
	// ErrThreadNotLoaded: the thread is not loaded in the current app-server
	// process ("thread not found"); EnsureThread must run first.
	ErrThreadNotLoaded = errors.New("codex: thread not loaded")
	// ErrNoActiveTurn: interrupt or steer with no running turn.
	ErrNoActiveTurn = errors.New("codex: no active turn")
	// ErrTurnMismatch: turn/steer named a turn that is not the thread's
	// active one ("expected active turn id … but found …"): another turn
	// runs on the thread. The steer input was not delivered.
	ErrTurnMismatch = errors.New("codex: the thread's active turn is another one")
	// ErrClosed: the client was closed.
	ErrClosed = errors.New("codex: client closed")
	// errThreadClosing: thread/resume of a thread the app-server is still
	// unloading; it asks to retry once the thread is closed.
	errThreadClosing = errors.New("codex: thread is closing")
	// ErrTurnActive: a turn (or compaction) is already running on the thread,
	// or Release was called while one runs.
	ErrTurnActive = errors.New("codex: a turn is already running on the thread")
)

// RPCError is a JSON-RPC error answered by the app-server. Every application
// error observed uses code -32600, so Is classifies by message text.
type RPCError struct {
	Method  string
	Code    int
	Message string
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("codex: %s: rpc error %d: %s", e.Method, e.Code, e.Message)
}

// messageClasses maps fragments of app-server error messages to sentinels.
// Order matters only for readability: the fragments do not overlap.
var messageClasses = []struct {
	fragment string
	target   error
}{
	{"no rollout found", ErrThreadLost},
	{"invalid session id", ErrThreadLost},
	{"is archived", ErrThreadLost},
	{"already has an active writer", ErrStaleWriter},
	{"is closing; retry thread/resume", errThreadClosing},
	{"thread not found", ErrThreadNotLoaded},
	{"no active turn to interrupt", ErrNoActiveTurn},
	{"no active turn to steer", ErrNoActiveTurn},
	{"expected active turn id", ErrTurnMismatch},
}

// Is reports whether the error's message classifies it as target.
func (e *RPCError) Is(target error) bool {
	msg := strings.ToLower(e.Message)
	for _, c := range messageClasses {
		if c.target == target && strings.Contains(msg, c.fragment) {
			return true
		}
	}
	return false
}

// timeoutError wraps a context deadline so that both errors.Is(err,
// ErrTimeout) and errors.Is(err, context.DeadlineExceeded) hold.
func timeoutError(what string, cause error) error {
	return fmt.Errorf("codex: %s: %w (%w)", what, ErrTimeout, cause)
}
