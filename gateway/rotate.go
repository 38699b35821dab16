package gateway

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"go.uber.org/zap"

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

// maybeRotate rotates the lane's session when the rotation boundary passed
// since its last turn, and tells the lane once. t.sl is updated to the lane
// after rotation. A failure to rotate is logged and the turn goes on in the
// old session: the message is never lost over it.
func (g *Gateway) maybeRotate(ctx context.Context, t *turn) {
	if g.cfg.Rotate.Off() {
		return
	}
	now := g.now()
	last, ok := g.lastActivity(ctx, t.l.key)
	if !ok {
		return // an empty session has nothing to archive
	}
	boundary := g.cfg.Rotate.Next(last.In(now.Location()))
	if boundary.IsZero() || now.Before(boundary) {
		return
	}
	keep := keepsThread(t.l.addr.Kind)
	why := g.rotateWhy(now.Sub(last))
	nl, err := g.st.RotateSession(ctx, t.l.key, t.sl.Generation, "rotate: "+why, keep)
	if errors.Is(err, store.ErrStaleGeneration) {
		// Reset meanwhile: the lane already has a fresh session.
		if sl, err := g.st.Lane(ctx, t.l.key); err == nil {
			t.sl = sl
		}
		return
	}
	if err != nil {
		g.log.Error("lane.rotate_failed", zap.String("lane", t.l.key), zap.Error(err))
		return
	}
	t.sl = nl
	if !keep {
		t.l.mu.Lock()
		if t.l.thread != "" {
			t.l.stale = true // released by ensure before the new thread starts
		}
		t.l.mu.Unlock()
	}
	g.log.Info("lane.rotated", zap.String("lane", t.l.key), zap.String("why", why), zap.Bool("kept_thread", keep))
	g.out.notify(ctx, t.l.addr, "", rotationNotice(why, keep))
}

// lastActivity is the time of the last transcript row of the lane's current
// session (its last turn).
func (g *Gateway) lastActivity(ctx context.Context, key string) (time.Time, bool) {
	msgs, err := g.st.Transcript(ctx, key, 1)
	if err != nil {
		g.log.Warn("lane.rotate_transcript_failed", zap.String("lane", key), zap.Error(err))
		return time.Time{}, false
	}
	if len(msgs) == 0 || msgs[0].CreatedAt.IsZero() {
		return time.Time{}, false
	}
	return msgs[0].CreatedAt, true
}

func (g *Gateway) rotateWhy(idle time.Duration) string {
	r := g.cfg.Rotate
	if r.Daily {
		return fmt.Sprintf("the daily rotation time %02d:%02d passed since the last message", r.Hour, r.Minute)
	}
	return fmt.Sprintf("this conversation was idle for %s (rotation after %s)", roundAge(idle), r.Every)
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

// rotationStatus is the /status line about rotation.
func (g *Gateway) rotationStatus() string {
	r := g.cfg.Rotate
	switch {
	case r.Daily:
		return fmt.Sprintf("Rotation: daily at %02d:%02d (at the first message after it)\n", r.Hour, r.Minute)
	case r.Every > 0:
		return fmt.Sprintf("Rotation: after %s idle\n", r.Every)
	}
	return "Rotation: off\n"
}

// rotationModule starts a new session before a turn when the lane was idle
// past the rotation policy.
func rotationModule(g *Gateway) module {
	return moduleFunc(func(h *host) {
		h.hooks.session = append(h.hooks.session, g.maybeRotate)
		h.hooks.status = append(h.hooks.status, func(_ context.Context, _ store.Lane, b *strings.Builder) {
			b.WriteString(g.rotationStatus())
		})
	})
}
