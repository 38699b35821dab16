package ext

import (
	"context"
	"errors"
	"time"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/runtime/codex"
)

// WorkViewHooks are what a view of a running turn's work uses of the core
// (feature/workview): the turns it watches, the platforms it shows them
// on, their edit rate and the gateway's ticker.
type WorkViewHooks interface {
	// OnWatch runs when a turn is about to load its thread and run, after
	// its typing started: what fn returns sees codex's progress events
	// and the turn's end (nil: fn watches nothing of this turn). replyTo
	// is the platform message the turn answers, started when it began.
	OnWatch(fn func(t Turn, replyTo string, started time.Time) TurnWatcher)
	// StatusMessages is the platform named, for a turn's status message;
	// false when it does not run here.
	StatusMessages(platform string) (StatusMessages, bool)
	// PreviewInterval is the least time between two edits of one message
	// (the platforms' edit rate).
	PreviewInterval() time.Duration
	// Ticker ticks about every d until stop is called: the gateway's, so
	// tests drive it.
	Ticker(d time.Duration) (ticks <-chan time.Time, stop func())
}

// TurnWatcher watches one turn.
type TurnWatcher interface {
	// Progress is one of codex's progress events of the turn; it must not
	// block (codex's events wait for it).
	Progress(p codex.Progress)
	// Stop ends the watch when the turn's reply is about to be sent (or
	// the turn ended without one), with the buttons features offered for
	// its end (Turn.OfferOnClose). Only the first call counts; the reply
	// waits for it.
	Stop(end time.Time, closing []chat.Button)
}

// StatusMessages sends and edits one silent status message per turn on
// a platform. A failure is counted as the platform's error by the core
// unless ctx ended; RetryAfter says whether the platform asked to wait.
type StatusMessages interface {
	// Send sends the status message as a silent reply to replyTo: text
	// for every platform, v for those that show the view structured.
	Send(ctx context.Context, addr chat.Address, replyTo, text string, v chat.WorkView) (id string, err error)
	// Edit replaces the status message id with text (and v).
	Edit(ctx context.Context, addr chat.Address, id, text string, v chat.WorkView) error
	// EditButtons replaces it with text and buttons; ok is false when the
	// platform cannot edit with buttons (nothing was tried).
	EditButtons(ctx context.Context, addr chat.Address, id, text string, buttons []chat.Button) (ok bool, err error)
}

// RetryAfter is the wait a platform's rate limit asked for in err (its
// error implements RetryAfter() time.Duration); ok is false for other
// errors.
func RetryAfter(err error) (after time.Duration, ok bool) {
	var ra interface{ RetryAfter() time.Duration }
	if errors.As(err, &ra) {
		return ra.RetryAfter(), true
	}
	return 0, false
}

// ClosingButtons are the buttons a turn's end offers (Diff, Undo): the
// work view shows them with its closing line.
type ClosingButtons interface {
	// OfferOnClose offers buttons with the turn's end; a CommandButton
	// whose command the gateway lacks is left out.
	OfferOnClose(buttons ...chat.Button)
}
