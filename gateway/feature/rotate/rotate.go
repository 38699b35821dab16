// Package rotate is transcript rotation (lanes.rotate): a lane idle past
// the policy starts a new transcript session at its next turn.
package rotate

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/store"
)

// Transcript rotation (Config.Rotate) is checked when a lane's next turn
// begins, never by a timer: the first message after the boundary ends the
// transcript session and starts a new one before it runs. Thread, topic,
// channel, group and API lanes keep their Codex thread (the working context
// survives; only our transcript segment changes); DM lanes start a fresh
// thread. The old session stays in the store, archived.

// keepsThread reports whether rotation keeps the lane's Codex thread.
func keepsThread(k chat.LaneKind) bool { return k != chat.LaneDM }

// Rotation starts a new transcript session before a turn when the lane
// was idle past the rotation policy.
type Rotation struct {
	policy config.Rotate
	st     Store
	host   ext.Host
	log    *zap.Logger
}

// Store is the part of the store rotation uses.
type Store interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	LastTurnAt(ctx context.Context, sessionKey string) (time.Time, error)
	RotateSession(ctx context.Context, sessionKey string, gen int64, reason string, keepThread bool) (store.Lane, error)
}

var _ Store = (*store.Store)(nil)

// New is rotation by policy, its sessions kept in st.
func New(policy config.Rotate, st Store) *Rotation {
	return &Rotation{policy: policy, st: st}
}

// Name is the feature's name.
func (r *Rotation) Name() string { return "rotate" }

// Register checks the policy when a turn's session is read and adds the
// /status line.
func (r *Rotation) Register(h ext.Host) error {
	r.host, r.log = h, h.Logger()
	if !r.policy.Off() { // a turn of a lane that never rotates does not pass here
		h.OnSession(r.maybeRotate)
	}
	h.OnStatus(func(_ context.Context, _ store.Lane, b *strings.Builder) {
		b.WriteString(r.status())
	})
	return nil
}

// maybeRotate rotates the lane's session when the rotation boundary passed
// since its last turn, and tells the lane once. t.sl is updated to the lane
// after rotation. A failure to rotate is logged and the turn goes on in the
// old session: the message is never lost over it.
func (r *Rotation) maybeRotate(ctx context.Context, t ext.Turn) {
	if r.policy.Off() {
		return
	}
	now := r.host.Now()
	l := t.Lane()
	last, ok := r.lastActivity(ctx, l.Key())
	if !ok {
		return // an empty session has nothing to archive
	}
	boundary := r.policy.Next(last.In(now.Location()))
	if boundary.IsZero() || now.Before(boundary) {
		return
	}
	keep := keepsThread(l.Address().Kind)
	why := r.why(now.Sub(last))
	nl, err := r.st.RotateSession(ctx, l.Key(), t.Row().Generation, "rotate: "+why, keep)
	if errors.Is(err, store.ErrStaleGeneration) {
		// Reset meanwhile: the lane already has a fresh session.
		if sl, err := r.st.Lane(ctx, l.Key()); err == nil {
			t.SetRow(sl)
		}
		return
	}
	if err != nil {
		r.log.Error("lane.rotate_failed", zap.String("lane", l.Key()), zap.Error(err))
		return
	}
	t.SetRow(nl)
	if !keep {
		l.RetireThread() // released by ensure before the new thread starts
	}
	r.log.Info("lane.rotated", zap.String("lane", l.Key()), zap.String("why", why), zap.Bool("kept_thread", keep))
	r.host.Notify(ctx, l.Address(), "", rotationNotice(why, keep))
}

// lastActivity is the time of the last turn of the lane's current session.
// Notices and refused messages are no activity: the "queued" notice of the
// very message that starts this turn must not keep the lane from rotating.
func (r *Rotation) lastActivity(ctx context.Context, key string) (time.Time, bool) {
	last, err := r.st.LastTurnAt(ctx, key)
	if err != nil {
		r.log.Warn("lane.rotate_transcript_failed", zap.String("lane", key), zap.Error(err))
		return time.Time{}, false
	}
	return last, !last.IsZero()
}

// why says which boundary passed, for the notice and the log.
func (r *Rotation) why(idle time.Duration) string {
	p := r.policy
	if p.Daily {
		return fmt.Sprintf("the daily rotation time %02d:%02d passed since the last message", p.Hour, p.Minute)
	}
	return fmt.Sprintf("this conversation was idle for %s (rotation after %s)", chat.Age(idle), p.Every)
}

// rotationNotice says what rotation did, in the words that match it.
func rotationNotice(why string, keptThread bool) string {
	if keptThread {
		return "New transcript session: " + why + ". The earlier transcript is archived; " +
			"Codex continues in the same thread, so it still has this conversation's context."
	}
	return "Starting fresh: " + why + ". This message goes to a new Codex thread that does not see the " +
		"earlier messages; the earlier transcript is archived."
}

// status is the /status line about rotation.
func (r *Rotation) status() string {
	p := r.policy
	switch {
	case p.Daily:
		return fmt.Sprintf("Rotation: daily at %02d:%02d (at the first message after it)\n", p.Hour, p.Minute)
	case p.Every > 0:
		return fmt.Sprintf("Rotation: after %s idle\n", p.Every)
	}
	return "Rotation: off\n"
}
