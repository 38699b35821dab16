package schedules

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/schedule"
	"github.com/gatewayd/gatewayd/store"
)

// The loop fires what is due: the firing's inbox row (message id
// "schedule:<id>:<due>") and the next due time are one commit, made only
// while the schedule is still at that due time, so a firing runs once
// across crashes, restarts and nodes, and then waits its turn like a
// message. A firing missed while gatewayd was down runs once at start
// when younger than schedules.catch_up, else it is skipped and the lane
// told.

// ownerGrace is how long a due firing waits for the node serving its
// lane before any node fires it (the owner may be down).
const ownerGrace = 5 * time.Second

// onTime is how late a firing may be and still count as on time, not
// missed: the loop's tick and a busy database make some lateness.
const onTime = 10 * time.Second

// dueBatch bounds the firings one tick takes; the rest come next tick.
const dueBatch = 64

// makerGone is why a schedule whose maker is no longer allowed stopped.
const makerGone = "its maker is no longer allowed"

// FireDue fires every schedule due now. The loop calls it at start (what
// came due while gatewayd was down) and every second; a test calls it to
// fire what is due at its clock's time.
func (s *Schedules) FireDue(ctx context.Context) {
	now := s.host.Now()
	due, err := s.st.DueSchedules(ctx, now, dueBatch)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Warn("schedule.due_failed", zap.Error(err))
		}
		return
	}
	for _, sc := range due {
		if ctx.Err() != nil {
			return
		}
		s.fire(ctx, sc, now)
	}
}

// fire runs one due schedule: its firing, or, missed for longer than
// schedules.catch_up, its skipping; then the next due time.
func (s *Schedules) fire(ctx context.Context, sc store.Schedule, now time.Time) {
	if !s.host.Serves(sc.SessionKey) && now.Sub(sc.NextAt) < ownerGrace {
		return // the lane's node fires it
	}
	sl, err := s.st.Lane(ctx, sc.SessionKey)
	if err != nil {
		s.log.Warn("schedule.lane_unreadable", zap.Int64("schedule", sc.ID), zap.String("lane", sc.SessionKey), zap.Error(err))
		return
	}
	addr := addressOf(sl)
	loc := s.location(sc.Timezone)
	if !s.host.MakerAllowed(addr, sc.CreatorID) {
		s.pause(ctx, addr, sc, loc)
		return
	}
	next, err := s.next(sc, now, loc)
	if err != nil {
		s.log.Error("schedule.rule_unreadable", zap.Int64("schedule", sc.ID), zap.String("rule", sc.Rule), zap.Error(err))
		next = time.Time{} // a rule this build cannot read fires once more and goes
	}
	if late := now.Sub(sc.NextAt); late > max(s.cfg.CatchUp, onTime) {
		s.skip(ctx, addr, sc, next, loc)
		return
	}
	rec := store.Inbound{Platform: addr.Platform, MessageID: fmt.Sprintf("schedule:%d:%d", sc.ID, sc.NextAt.UnixNano()),
		SessionKey: sc.SessionKey, SenderID: sc.CreatorID, SenderName: sc.CreatorName, Text: sc.Prompt, ReceivedAt: now,
		Origin: origin(sc, loc)}
	id, fired, err := s.host.Trigger(ctx, addr, &rec, func(ctx context.Context) (int64, bool, error) {
		return s.st.FireSchedule(ctx, store.Firing{Schedule: sc, Inbound: &rec, Next: next})
	})
	if err != nil {
		s.log.Warn("schedule.fire_failed", zap.Int64("schedule", sc.ID), zap.String("lane", sc.SessionKey), zap.Error(err))
		return
	}
	if fired {
		s.cfg.Fired()
		s.log.Info("schedule.fired", zap.Int64("schedule", sc.ID), zap.String("lane", sc.SessionKey), zap.Int64("inbound", id),
			zap.Duration("late", now.Sub(sc.NextAt)), zap.Time("next", next))
	}
}

// addressOf rebuilds the address of a stored lane.
func addressOf(sl store.Lane) chat.Address {
	return chat.Address{Platform: sl.Platform, Kind: chat.LaneKind(sl.Kind), ChatID: sl.ChatID, TopicID: sl.TopicID,
		UserID: sl.UserID}
}

// next is the due time after this firing; zero when the schedule is done.
func (s *Schedules) next(sc store.Schedule, now time.Time, loc *time.Location) (time.Time, error) {
	if sc.Rule == "" {
		return time.Time{}, nil
	}
	rule, err := schedule.ParseRule(sc.Rule)
	if err != nil {
		return time.Time{}, err
	}
	return rule.After(sc.NextAt, now, loc), nil
}

// skip moves a schedule past a firing missed for too long and tells the
// lane once.
func (s *Schedules) skip(ctx context.Context, addr chat.Address, sc store.Schedule, next time.Time, loc *time.Location) {
	_, fired, err := s.st.FireSchedule(ctx, store.Firing{Schedule: sc, Next: next})
	if err != nil || !fired {
		if err != nil {
			s.log.Warn("schedule.skip_failed", zap.Int64("schedule", sc.ID), zap.Error(err))
		}
		return
	}
	s.log.Info("schedule.skipped", zap.Int64("schedule", sc.ID), zap.String("lane", sc.SessionKey), zap.Time("due", sc.NextAt))
	text := fmt.Sprintf("⏰ Skipped %s, due %s: gatewayd was down and it is older than schedules.catch_up (%s).",
		scheduleName(sc.ID), when(sc.NextAt, loc), s.cfg.CatchUp)
	if !next.IsZero() {
		text += " Next: " + when(next, loc) + "."
	}
	s.host.Notify(ctx, addr, "", text)
}

// pause stops a schedule whose maker was removed from the allowlist
// (SIGHUP) from firing: it would run their prompt, as them, in a lane
// they may no longer use. The lane is told once; /schedules shows why.
func (s *Schedules) pause(ctx context.Context, addr chat.Address, sc store.Schedule, loc *time.Location) {
	paused, err := s.st.PauseSchedule(ctx, sc, makerGone)
	if err != nil || !paused {
		if err != nil {
			s.log.Warn("schedule.pause_failed", zap.Int64("schedule", sc.ID), zap.Error(err))
		}
		return
	}
	s.log.Info("schedule.paused", zap.Int64("schedule", sc.ID), zap.String("lane", sc.SessionKey),
		zap.String("maker", sc.CreatorID), zap.String("reason", makerGone))
	s.host.Notify(ctx, addr, "", fmt.Sprintf("⏰ Paused %s (%s, by %s), due %s: %s. /unschedule %s removes it.",
		scheduleName(sc.ID), ruleText(sc), makerOf(sc), when(sc.NextAt, loc), makerGone, scheduleName(sc.ID)))
}

// origin is what a firing's reply starts with.
func origin(sc store.Schedule, loc *time.Location) string {
	if sc.Rule != "" {
		return "⏰ " + sc.Rule
	}
	return "⏰ at " + when(sc.NextAt, loc)
}
