// Package senderlimit is lanes.max_per_minute: how many messages one sender
// may send a lane in a minute.
package senderlimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/store"
)

// Limits per sender (lanes.max_per_minute): one sender may send
// a lane at most max messages a minute. Past it, the message is refused
// before anything of it is stored, so it is never run, not even after a
// restart; the sender hears it once per minute in the lane (on the API
// lane every refused request is answered 429). The platform still
// acknowledges the refused update: redelivering it would only be refused
// again, or run a message its sender was told was refused. Admins are
// exempt: they are the ones who fix what a flood breaks.

// senderWindowLen is the length of one sender's counting window.
const senderWindowLen = time.Minute

// maxSenderWindows bounds the windows kept at once. Only allowed senders
// are counted and a window is swept a minute after it ends, so this is
// reached only by a flood of distinct API users.
const maxSenderWindows = 10000

// ceilSeconds rounds up to a whole second, never below one: what
// Retry-After says and the notice shows.
func ceilSeconds(d time.Duration) time.Duration {
	s := (d + time.Second - 1).Truncate(time.Second)
	return max(s, time.Second)
}

// senderLimitStore finds a message recorded before: a redelivery of an
// accepted message is a duplicate, never a refusal, even past the limit
// (it is recorded, so it runs, and the sender must not hear otherwise).
type Store interface {
	Exchange(ctx context.Context, platform, messageID string) (store.Exchange, error)
}

var _ Store = (*store.Store)(nil)

// Limits counts each sender's messages per lane in fixed windows that
// start with the sender's first message.
type Limits struct {
	max  int // lanes.max_per_minute; 0: off
	st   Store
	host ext.Host
	log  *zap.Logger
	now  func() time.Time

	mu      sync.Mutex
	windows map[senderKey]*senderWindow
	swept   time.Time // when expired windows were last removed
}

type senderKey struct{ lane, sender string }

type senderWindow struct {
	end  time.Time
	n    int  // messages in the window, refused ones too
	told bool // the sender heard of the refusal in this window
}

// New limits each sender to max messages a minute per lane (0: off).
func New(max int, st Store) *Limits {
	return &Limits{max: max, st: st, now: time.Now, windows: make(map[senderKey]*senderWindow)}
}

// Name is the feature's name.
func (s *Limits) Name() string { return "senderlimit" }

// Register counts messages in intake, before anything of them is stored.
func (s *Limits) Register(h ext.Host) error {
	s.host, s.log, s.now = h, h.Logger(), h.Now
	if s.max > 0 {
		h.OnAdmit(s.admit)
	}
	return nil
}

// admit counts in and reports whether it is refused. A refused message on
// the API lane is answered with a *SenderLimitError; on a chat lane the
// sender is told once per window and the error is nil.
func (s *Limits) admit(ctx context.Context, in chat.Inbound) (bool, error) {
	if s.host.IsAdmin(in) {
		return false, nil
	}
	k := senderKey{lane: in.Address.SessionKey(), sender: in.SenderID}
	wait, over := s.count(k)
	if !over {
		return false, nil
	}
	switch _, err := s.st.Exchange(ctx, in.Address.Platform, in.MessageID); {
	case err == nil: // recorded before: intake answers it as the duplicate it is
		return false, nil
	case !errors.Is(err, store.ErrNotFound): // unknown: not acknowledged, so redelivered
		return true, fmt.Errorf("senderlimit: %w", err)
	}
	first := s.refused(k)
	if first {
		s.log.Info("inbound.sender_limited", zap.String("lane", k.lane), zap.String("sender", k.sender),
			zap.Int("limit", s.max), zap.Duration("until", wait))
	}
	if in.Address.Kind == chat.LaneAPI { // the request's answer is the refusal
		return true, &chat.SenderLimitError{Limit: s.max, RetryAfter: ceilSeconds(wait)}
	}
	if first {
		s.host.Notify(s.host.Context(), in.Address, in.MessageID, fmt.Sprintf(
			"You sent more than %d messages here within a minute (lanes.max_per_minute). This one and what you "+
				"send in the next %s are refused: not stored, not run. Send them again after that.", s.max, ceilSeconds(wait)))
	}
	return true, nil
}

// count adds a message to the sender's window and reports whether it is
// past the limit, and then how long until the window ends.
func (s *Limits) count(k senderKey) (wait time.Duration, over bool) {
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.windows[k]
	if w == nil || !now.Before(w.end) {
		s.makeRoom(now)
		w = &senderWindow{end: now.Add(senderWindowLen)}
		s.windows[k] = w
	}
	w.n++
	if w.n <= s.max {
		return 0, false
	}
	return w.end.Sub(now), true
}

// refused notes a refusal in the sender's window and reports whether it
// is the window's first (the one the sender hears of).
func (s *Limits) refused(k senderKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.windows[k]
	if w == nil || w.told {
		return false
	}
	w.told = true
	return true
}

// makeRoom removes ended windows, at most once a window's length unless
// the map is full; a map still full loses arbitrary windows (their
// senders start afresh), so memory stays bounded. s.mu is held.
func (s *Limits) makeRoom(now time.Time) {
	full := len(s.windows) >= maxSenderWindows
	if !full && now.Sub(s.swept) < senderWindowLen {
		return
	}
	s.swept = now
	for k, w := range s.windows {
		if !now.Before(w.end) {
			delete(s.windows, k)
		}
	}
	for k := range s.windows {
		if len(s.windows) < maxSenderWindows {
			break
		}
		delete(s.windows, k)
	}
}

// size is how many windows are kept (tests).
func (s *Limits) size() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.windows)
}
