package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/store"
)

// Transcript rotation (Config.Rotate) is checked when a lane's next turn
// begins, never by a timer: the first message after the boundary ends the
// transcript session and starts a new one before it runs. Thread, topic,
// channel, group and API lanes keep their Codex thread (the working context
// survives; only our transcript segment changes); DM lanes start a fresh
// thread. The old session stays in the store, archived.

// keepsThread reports whether rotation keeps the lane's Codex thread.
func keepsThread(k LaneKind) bool { return k != LaneDM }

// rotation is Config.Rotate: it starts a new transcript session before a
// turn when the lane was idle past the rotation policy.
type rotation struct {
	policy config.Rotate
	st     rotationStore
	out    *deliverer
	log    *zap.Logger
	now    func() time.Time
}

// rotationStore is the part of the store rotation uses.
type rotationStore interface {
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	LastTurnAt(ctx context.Context, sessionKey string) (time.Time, error)
	RotateSession(ctx context.Context, sessionKey string, gen int64, reason string, keepThread bool) (store.Lane, error)
}

var _ rotationStore = (*store.Store)(nil)

func newRotation(cfg Config, st rotationStore, out *deliverer, log *zap.Logger) *rotation {
	return &rotation{policy: cfg.Rotate, st: st, out: out, log: log, now: cfg.Now}
}

// register checks the policy when a turn's session is read and adds the
// /status line.
func (r *rotation) register(h *host) {
	if !r.policy.Off() { // a turn of a lane that never rotates does not pass here
		h.hooks.session = append(h.hooks.session, r.maybeRotate)
	}
	h.hooks.status = append(h.hooks.status, func(_ context.Context, _ store.Lane, b *strings.Builder) {
		b.WriteString(r.status())
	})
}

// maybeRotate rotates the lane's session when the rotation boundary passed
// since its last turn, and tells the lane once. t.sl is updated to the lane
// after rotation. A failure to rotate is logged and the turn goes on in the
// old session: the message is never lost over it.
func (r *rotation) maybeRotate(ctx context.Context, t *turn) {
	if r.policy.Off() {
		return
	}
	now := r.now()
	last, ok := r.lastActivity(ctx, t.l.key)
	if !ok {
		return // an empty session has nothing to archive
	}
	boundary := r.policy.Next(last.In(now.Location()))
	if boundary.IsZero() || now.Before(boundary) {
		return
	}
	keep := keepsThread(t.l.addr.Kind)
	why := r.why(now.Sub(last))
	nl, err := r.st.RotateSession(ctx, t.l.key, t.sl.Generation, "rotate: "+why, keep)
	if errors.Is(err, store.ErrStaleGeneration) {
		// Reset meanwhile: the lane already has a fresh session.
		if sl, err := r.st.Lane(ctx, t.l.key); err == nil {
			t.sl = sl
		}
		return
	}
	if err != nil {
		r.log.Error("lane.rotate_failed", zap.String("lane", t.l.key), zap.Error(err))
		return
	}
	t.sl = nl
	if !keep {
		t.l.retireThread() // released by ensure before the new thread starts
	}
	r.log.Info("lane.rotated", zap.String("lane", t.l.key), zap.String("why", why), zap.Bool("kept_thread", keep))
	r.out.notify(ctx, t.l.addr, "", rotationNotice(why, keep))
}

// lastActivity is the time of the last turn of the lane's current session.
// Notices and refused messages are no activity: the "queued" notice of the
// very message that starts this turn must not keep the lane from rotating.
func (r *rotation) lastActivity(ctx context.Context, key string) (time.Time, bool) {
	last, err := r.st.LastTurnAt(ctx, key)
	if err != nil {
		r.log.Warn("lane.rotate_transcript_failed", zap.String("lane", key), zap.Error(err))
		return time.Time{}, false
	}
	return last, !last.IsZero()
}

// why says which boundary passed, for the notice and the log.
func (r *rotation) why(idle time.Duration) string {
	p := r.policy
	if p.Daily {
		return fmt.Sprintf("the daily rotation time %02d:%02d passed since the last message", p.Hour, p.Minute)
	}
	return fmt.Sprintf("this conversation was idle for %s (rotation after %s)", roundAge(idle), p.Every)
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
func (r *rotation) status() string {
	p := r.policy
	switch {
	case p.Daily:
		return fmt.Sprintf("Rotation: daily at %02d:%02d (at the first message after it)\n", p.Hour, p.Minute)
	case p.Every > 0:
		return fmt.Sprintf("Rotation: after %s idle\n", p.Every)
	}
	return "Rotation: off\n"
}
