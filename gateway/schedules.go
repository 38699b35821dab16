package gateway

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/schedule"
	"github.com/gatewayd/gatewayd/store"
)

// Schedules: /at WHEN PROMPT and /every SPEC PROMPT run a
// prompt in the lane later, once or again and again; /schedules lists the
// lane's, /unschedule ID removes one (its maker or an admin), /tz sets the
// zone the lane's times are read in. A schedule lives in the database
// with its next due time. The loop below fires what is due: the firing's
// inbox row (message id "schedule:<id>:<due>") and the next due time are
// one commit, made only while the schedule is still at that due time, so
// a firing runs once across crashes, restarts and nodes, and then waits
// its turn like a message. A firing missed while gatewayd was down runs
// once at start when younger than schedules.catch_up, else it is skipped
// and the lane told.

// ScheduleConfig is schedules.* and lanes.timezone.
type ScheduleConfig struct {
	MinInterval time.Duration // default config.DefaultScheduleMinInterval
	CatchUp     time.Duration // 0: a missed firing is always skipped
	MaxPerLane  int           // default config.DefaultSchedulesPerLane
	// Timezone is lanes.timezone; "" is the machine's.
	Timezone string
}

// scheduleStore is the part of the store schedules use.
type scheduleStore interface {
	AddSchedule(ctx context.Context, sc store.Schedule, max int) (store.Schedule, error)
	Schedules(ctx context.Context, sessionKey string) ([]store.Schedule, error)
	DueSchedules(ctx context.Context, now time.Time, limit int) ([]store.Schedule, error)
	DeleteSchedule(ctx context.Context, sessionKey string, id int64) error
	FireSchedule(ctx context.Context, f store.Firing) (inboundID int64, fired bool, err error)
	PauseSchedule(ctx context.Context, sc store.Schedule, reason string) (paused bool, err error)
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	SetLaneOption(ctx context.Context, sessionKey string, opt store.LaneOption, value string) error
}

var _ scheduleStore = (*store.Store)(nil)

// ownerGrace is how long a due firing waits for the node serving its
// lane before any node fires it (the owner may be down).
const ownerGrace = 5 * time.Second

// onTime is how late a firing may be and still count as on time, not
// missed: the loop's tick and a busy database make some lateness.
const onTime = 10 * time.Second

// dueBatch bounds the firings one tick takes; the rest come next tick.
const dueBatch = 64

type schedules struct {
	cfg      ScheduleConfig
	st       scheduleStore
	in       *intake
	out      *deliverer
	deciders approverRule
	log      *zap.Logger
	now      func() time.Time
	gate     func() LaneGate // the gateway's, set by SetLaneGate before Run
	fired    func()          // counts a firing (Observer.ScheduleFired)
}

func newSchedules(cfg Config, st scheduleStore, out *deliverer, log *zap.Logger) *schedules {
	return &schedules{cfg: cfg.Schedules, st: st, out: out, deciders: newApproverRule(cfg), log: log, now: cfg.Now,
		fired: cfg.Observer.ScheduleFired}
}

func (s *schedules) register(h *host) {
	h.command("at", s.at)
	h.command("every", s.every)
	h.command("schedules", s.list)
	h.command("unschedule", s.unschedule)
	h.command("tz", s.timezone)
	h.hooks.status = append(h.hooks.status, s.status)
}

// location is the zone of a lane whose /tz is tz.
func (s *schedules) location(tz string) *time.Location {
	for _, name := range []string{tz, s.cfg.Timezone} {
		if name == "" {
			continue
		}
		if loc, err := schedule.LoadLocation(name); err == nil {
			return loc
		}
	}
	return time.Local
}

// laneZone reads the lane's /tz ("" when unset or unreadable).
func (s *schedules) laneZone(ctx context.Context, key string) string {
	sl, err := s.st.Lane(ctx, key)
	if err != nil {
		return ""
	}
	return sl.Timezone
}

func (s *schedules) at(ctx context.Context, c commandCall) bool {
	tz := s.laneZone(ctx, c.lane.key)
	loc := s.location(tz)
	due, prompt, err := schedule.ParseAt(c.args, s.now(), loc)
	if err != nil {
		s.out.Notify(ctx, c.lane.addr, c.msgID, "Usage: /at WHEN PROMPT. "+err.Error())
		return true
	}
	s.add(ctx, c, store.Schedule{Prompt: prompt, NextAt: due, Timezone: loc.String()},
		fmt.Sprintf("at %s", when(due, loc)))
	return true
}

func (s *schedules) every(ctx context.Context, c commandCall) bool {
	tz := s.laneZone(ctx, c.lane.key)
	loc := s.location(tz)
	rule, prompt, err := schedule.ParseEvery(c.args, loc, s.cfg.MinInterval)
	if err != nil {
		s.out.Notify(ctx, c.lane.addr, c.msgID, "Usage: /every SPEC PROMPT. "+err.Error())
		return true
	}
	now := s.now()
	next := rule.After(now, now, loc)
	s.add(ctx, c, store.Schedule{Rule: rule.String(), Prompt: prompt, NextAt: next, Timezone: loc.String()},
		fmt.Sprintf("%s; next %s", rule, when(next, loc)))
	return true
}

// add stores the schedule the command made and answers with what it is.
func (s *schedules) add(ctx context.Context, c commandCall, sc store.Schedule, what string) {
	sc.SessionKey, sc.CreatorID, sc.CreatorName = c.lane.key, c.sender, c.senderName
	sc.CreatedAt = s.now()
	saved, err := s.st.AddSchedule(ctx, sc, s.cfg.MaxPerLane)
	switch {
	case errors.Is(err, store.ErrLimit):
		s.out.Notify(ctx, c.lane.addr, c.msgID, fmt.Sprintf("This conversation has %d schedules already (schedules.max_per_lane); "+
			"/unschedule one first.", s.cfg.MaxPerLane))
		return
	case err != nil:
		s.log.Error("schedule.add_failed", zap.String("lane", c.lane.key), zap.Error(err))
		s.out.Notify(ctx, c.lane.addr, c.msgID, "Could not store the schedule: the database refused; nothing was scheduled. Try again.")
		return
	}
	s.log.Info("schedule.added", zap.String("lane", c.lane.key), zap.Int64("schedule", saved.ID),
		zap.String("rule", saved.Rule), zap.Time("next", saved.NextAt))
	s.out.Notify(ctx, c.lane.addr, c.msgID, fmt.Sprintf("⏰ Scheduled %s, %s: %s", scheduleName(saved.ID), what, saved.Prompt))
}

func scheduleName(id int64) string { return "s" + strconv.FormatInt(id, 10) }

// when shows a due time in the lane's zone.
func when(t time.Time, loc *time.Location) string {
	return t.In(loc).Format("Mon 2 Jan 15:04 MST")
}

func (s *schedules) list(ctx context.Context, c commandCall) bool {
	all, err := s.st.Schedules(ctx, c.lane.key)
	if err != nil {
		s.log.Error("schedule.list_failed", zap.String("lane", c.lane.key), zap.Error(err))
		s.out.Notify(ctx, c.lane.addr, c.msgID, "Could not read the schedules: the database refused. Try again.")
		return true
	}
	if len(all) == 0 {
		s.out.Notify(ctx, c.lane.addr, c.msgID, "No schedules here. /at WHEN PROMPT or /every SPEC PROMPT makes one.")
		return true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Schedules (%d):\n", len(all))
	for _, sc := range all {
		loc := s.location(sc.Timezone)
		rule, by := ruleText(sc), makerOf(sc)
		if sc.Paused != "" {
			fmt.Fprintf(&b, "%s · paused: %s · %s", scheduleName(sc.ID), sc.Paused, rule)
		} else {
			fmt.Fprintf(&b, "%s · next %s · %s", scheduleName(sc.ID), when(sc.NextAt, loc), rule)
		}
		if by != "" {
			fmt.Fprintf(&b, " · by %s", by)
		}
		fmt.Fprintf(&b, " · %s\n", cutRunes(sc.Prompt, 80))
	}
	b.WriteString("/unschedule ID removes one.")
	s.out.Notify(ctx, c.lane.addr, c.msgID, b.String())
	return true
}

func (s *schedules) unschedule(ctx context.Context, c commandCall) bool {
	id, ok := parseScheduleID(c.args)
	if !ok {
		s.out.Notify(ctx, c.lane.addr, c.msgID, "Usage: /unschedule ID (as /schedules lists them, e.g. s3).")
		return true
	}
	sc, found, err := s.find(ctx, c.lane.key, id)
	switch {
	case err != nil:
		s.log.Error("schedule.read_failed", zap.String("lane", c.lane.key), zap.Error(err))
		s.out.Notify(ctx, c.lane.addr, c.msgID, "Could not read the schedules: the database refused. Try again.")
		return true
	case !found:
		s.out.Notify(ctx, c.lane.addr, c.msgID, fmt.Sprintf("No schedule %s here; /schedules lists them.", scheduleName(id)))
		return true
	}
	creator := sc.CreatorID
	if !isGroupPlace(c.lane.addr.Kind) {
		creator = "" // one person's place: whoever is here decides
	}
	if !s.deciders.may(c.lane.addr.Platform, creator, c.sender, false) {
		s.out.Notify(ctx, c.lane.addr, c.msgID, s.deciders.refusal(sc.CreatorID, sc.CreatorName).Error()+"; "+scheduleName(id)+" stays.")
		return true
	}
	if err := s.st.DeleteSchedule(ctx, c.lane.key, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Error("schedule.delete_failed", zap.String("lane", c.lane.key), zap.Error(err))
		s.out.Notify(ctx, c.lane.addr, c.msgID, "Could not remove the schedule: the database refused; it stays. Try again.")
		return true
	}
	s.log.Info("schedule.removed", zap.String("lane", c.lane.key), zap.Int64("schedule", id), zap.String("by", c.sender))
	s.out.Notify(ctx, c.lane.addr, c.msgID, fmt.Sprintf("Removed %s: %s", scheduleName(id), sc.Prompt))
	return true
}

func parseScheduleID(args string) (int64, bool) {
	f := strings.Fields(args)
	if len(f) != 1 {
		return 0, false
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(strings.ToLower(f[0]), "s"), 10, 64)
	return id, err == nil && id > 0
}

func (s *schedules) find(ctx context.Context, key string, id int64) (store.Schedule, bool, error) {
	all, err := s.st.Schedules(ctx, key)
	if err != nil {
		return store.Schedule{}, false, err
	}
	for _, sc := range all {
		if sc.ID == id {
			return sc, true, nil
		}
	}
	return store.Schedule{}, false, nil
}

func (s *schedules) timezone(ctx context.Context, c commandCall) bool {
	name := strings.TrimSpace(c.args)
	if name == "" {
		loc := s.location(s.laneZone(ctx, c.lane.key))
		s.out.Notify(ctx, c.lane.addr, c.msgID, fmt.Sprintf("Time zone: %s (now %s). /tz ZONE changes it, /tz default goes back to lanes.timezone.",
			loc, s.now().In(loc).Format("15:04 MST")))
		return true
	}
	value := name
	if strings.EqualFold(name, "default") {
		value = ""
	} else if _, err := schedule.LoadLocation(name); err != nil {
		s.out.Notify(ctx, c.lane.addr, c.msgID, err.Error())
		return true
	}
	if err := s.st.SetLaneOption(ctx, c.lane.key, store.OptionTZ, value); err != nil {
		s.log.Error("schedule.tz_failed", zap.String("lane", c.lane.key), zap.Error(err))
		s.out.Notify(ctx, c.lane.addr, c.msgID, "Could not change the time zone: the database refused; nothing changed. Try again.")
		return true
	}
	loc := s.location(value)
	s.out.Notify(ctx, c.lane.addr, c.msgID, fmt.Sprintf("Time zone: %s (now %s). Schedules made from now on read times in it.",
		loc, s.now().In(loc).Format("15:04 MST")))
	return true
}

// status adds the lane's schedules to /status.
func (s *schedules) status(ctx context.Context, sl store.Lane, b *strings.Builder) {
	all, err := s.st.Schedules(ctx, sl.SessionKey)
	if err != nil || len(all) == 0 {
		return
	}
	var next *store.Schedule
	paused := 0
	for i, sc := range all {
		switch {
		case sc.Paused != "":
			paused++
		case next == nil || sc.NextAt.Before(next.NextAt):
			next = &all[i]
		}
	}
	fmt.Fprintf(b, "Schedules: %d", len(all))
	if next != nil {
		fmt.Fprintf(b, " (next %s at %s)", scheduleName(next.ID), when(next.NextAt, s.location(next.Timezone)))
	}
	if paused > 0 {
		fmt.Fprintf(b, ", %d paused", paused)
	}
	b.WriteString("\n")
}

// loop fires due schedules once a second until ctx ends.
func (s *schedules) loop(ctx context.Context, newTicker func(time.Duration) (<-chan time.Time, func())) {
	tick, stop := newTicker(time.Second)
	defer stop()
	s.fireDue(ctx) // what came due while gatewayd was down
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			s.fireDue(ctx)
		}
	}
}

// fireDue fires every schedule due now.
func (s *schedules) fireDue(ctx context.Context) {
	now := s.now()
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
func (s *schedules) fire(ctx context.Context, sc store.Schedule, now time.Time) {
	if g := s.gate(); g != nil && !g.Serves(sc.SessionKey) && now.Sub(sc.NextAt) < ownerGrace {
		return // the lane's node fires it
	}
	sl, err := s.st.Lane(ctx, sc.SessionKey)
	if err != nil {
		s.log.Warn("schedule.lane_unreadable", zap.Int64("schedule", sc.ID), zap.String("lane", sc.SessionKey), zap.Error(err))
		return
	}
	addr := addressOfLane(sl)
	loc := s.location(sc.Timezone)
	if !s.in.makerAllowed(addr, sc.CreatorID) {
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
		Origin: scheduleOrigin(sc, loc)}
	id, fired, err := s.in.fire(ctx, addr, &rec, func(ctx context.Context) (int64, bool, error) {
		return s.st.FireSchedule(ctx, store.Firing{Schedule: sc, Inbound: &rec, Next: next})
	})
	if err != nil {
		s.log.Warn("schedule.fire_failed", zap.Int64("schedule", sc.ID), zap.String("lane", sc.SessionKey), zap.Error(err))
		return
	}
	if fired {
		s.fired()
		s.log.Info("schedule.fired", zap.Int64("schedule", sc.ID), zap.String("lane", sc.SessionKey), zap.Int64("inbound", id),
			zap.Duration("late", now.Sub(sc.NextAt)), zap.Time("next", next))
	}
}

// next is the due time after this firing; zero when the schedule is done.
func (s *schedules) next(sc store.Schedule, now time.Time, loc *time.Location) (time.Time, error) {
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
func (s *schedules) skip(ctx context.Context, addr Address, sc store.Schedule, next time.Time, loc *time.Location) {
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
	s.out.Notify(ctx, addr, "", text)
}

// makerGone is why a schedule whose maker is no longer allowed stopped.
const makerGone = "its maker is no longer allowed"

// pause stops a schedule whose maker was removed from the allowlist
// (SIGHUP) from firing: it would run their prompt, as them, in a lane
// they may no longer use. The lane is told once; /schedules shows why.
func (s *schedules) pause(ctx context.Context, addr Address, sc store.Schedule, loc *time.Location) {
	paused, err := s.st.PauseSchedule(ctx, sc, makerGone)
	if err != nil || !paused {
		if err != nil {
			s.log.Warn("schedule.pause_failed", zap.Int64("schedule", sc.ID), zap.Error(err))
		}
		return
	}
	s.log.Info("schedule.paused", zap.Int64("schedule", sc.ID), zap.String("lane", sc.SessionKey),
		zap.String("maker", sc.CreatorID), zap.String("reason", makerGone))
	s.out.Notify(ctx, addr, "", fmt.Sprintf("⏰ Paused %s (%s, by %s), due %s: %s. /unschedule %s removes it.",
		scheduleName(sc.ID), ruleText(sc), makerOf(sc), when(sc.NextAt, loc), makerGone, scheduleName(sc.ID)))
}

func ruleText(sc store.Schedule) string {
	if sc.Rule == "" {
		return "once"
	}
	return sc.Rule
}

func makerOf(sc store.Schedule) string {
	if sc.CreatorName != "" {
		return sc.CreatorName
	}
	return sc.CreatorID
}

// MakerAuthorizer is an optional capability of an Authorizer that cannot
// always tell from a sender's id alone (Discord allows by role, and a
// schedule keeps no roles): known is false when it cannot.
type MakerAuthorizer interface {
	AuthorizeMaker(addr Address, senderID string) (allowed, known bool)
}

// makerAllowed says whether the maker of a schedule in the lane at addr
// may still use it, by the platform's current allowlist. A maker the
// platform cannot judge (no id, a Discord role) keeps it firing, as
// before allowlists were checked here.
func (k *intake) makerAllowed(addr Address, maker string) bool {
	if maker == "" {
		return true
	}
	if m, ok := k.platforms[addr.Platform].(MakerAuthorizer); ok {
		allowed, known := m.AuthorizeMaker(addr, maker)
		return allowed || !known
	}
	return k.authorized(Inbound{Address: addr, SenderID: maker})
}

// scheduleOrigin is what a firing's reply starts with.
func scheduleOrigin(sc store.Schedule, loc *time.Location) string {
	if sc.Rule != "" {
		return "⏰ " + sc.Rule
	}
	return "⏰ at " + when(sc.NextAt, loc)
}

// fire records a firing with write, in the lane's intake order, and runs
// the row rec it wrote.
func (k *intake) fire(ctx context.Context, addr Address, rec *store.Inbound,
	write func(ctx context.Context) (id int64, fired bool, err error)) (int64, bool, error) {
	l := k.enterIntake(addr)
	defer k.leaveIntake(l)
	id, fired, err := write(ctx)
	if err != nil || !fired {
		return id, fired, err
	}
	k.obs.Inbound(addr.Platform)
	if k.gate != nil {
		k.gate.Recorded(rec.SessionKey)
		return id, true, nil
	}
	k.dispatch(k.base, recorded{addr: addr, inboundID: id, msgID: rec.MessageID, text: rec.Text,
		sender: rec.SenderID, senderName: rec.SenderName, origin: rec.Origin})
	return id, true, nil
}
