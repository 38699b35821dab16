// Package schedules is /at WHEN PROMPT and /every SPEC PROMPT: a prompt
// the lane runs later, once or again and again; /schedules lists the
// lane's, /unschedule ID removes one (its maker or an admin), /tz sets the
// zone the lane's times are read in. A schedule lives in the database
// with its next due time; a loop fires what is due (fire.go).
package schedules

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/gateway/ext"
	"github.com/gatewayd/gatewayd/schedule"
	"github.com/gatewayd/gatewayd/store"
)

// Config is schedules.* and lanes.timezone.
type Config struct {
	MinInterval time.Duration // schedules.min_interval; 0: none
	CatchUp     time.Duration // schedules.catch_up; 0: a missed firing is always skipped
	MaxPerLane  int           // schedules.max_per_lane; 0: no limit
	// Timezone is lanes.timezone; "" is the machine's.
	Timezone string
	// Fired counts a firing (gatewayd_schedule_firings_total); nil counts
	// nothing.
	Fired func()
}

// WithDefaults is c with the limits left unset (zero) taken from config's
// key table. It is for a Config built by hand (tests); the daemon sets
// every field from the loaded configuration.
func (c Config) WithDefaults() Config {
	d := config.Defaults()
	if c.MinInterval <= 0 {
		c.MinInterval = d.Schedules.MinInterval
	}
	if c.MaxPerLane <= 0 {
		c.MaxPerLane = d.Schedules.MaxPerLane
	}
	return c
}

// Store is the part of the store schedules use.
type Store interface {
	AddSchedule(ctx context.Context, sc store.Schedule, max int) (store.Schedule, error)
	Schedules(ctx context.Context, sessionKey string) ([]store.Schedule, error)
	DueSchedules(ctx context.Context, now time.Time, limit int) ([]store.Schedule, error)
	DeleteSchedule(ctx context.Context, sessionKey string, id int64) error
	FireSchedule(ctx context.Context, f store.Firing) (inboundID int64, fired bool, err error)
	PauseSchedule(ctx context.Context, sc store.Schedule, reason string) (paused bool, err error)
	Lane(ctx context.Context, sessionKey string) (store.Lane, error)
	SetLaneOption(ctx context.Context, sessionKey string, opt store.LaneOption, value string) error
}

var _ Store = (*store.Store)(nil)

// Schedules are the lanes' scheduled prompts: their commands and the loop
// that fires them.
type Schedules struct {
	cfg  Config
	st   Store
	host ext.Host
	log  *zap.Logger
}

// New is the schedules of cfg, kept in st.
func New(cfg Config, st Store) *Schedules {
	if cfg.Fired == nil {
		cfg.Fired = func() {} // no metrics
	}
	return &Schedules{cfg: cfg, st: st}
}

// Name is the feature's name.
func (s *Schedules) Name() string { return "schedules" }

// Config is the configuration the schedules run with.
func (s *Schedules) Config() Config { return s.cfg }

// Register adds /at, /every, /schedules, /unschedule and /tz, the lane's
// schedules in /status, and the loop that fires them.
func (s *Schedules) Register(h ext.Host) error {
	s.host, s.log = h, h.Logger()
	for _, c := range []ext.Command{
		{Name: "at", Args: "WHEN PROMPT", Description: "Run a prompt here later: in 10m, at 15:30, on 2026-12-24 09:00", Run: s.at},
		{Name: "every", Args: "SPEC PROMPT", Description: "Run a prompt here again and again: 30m, day 09:00, weekdays 09:00, a cron line", Run: s.every},
		{Name: "schedules", Description: "List this conversation's scheduled prompts", Menu: true, Run: s.list},
		{Name: "unschedule", Args: "ID", Description: "Remove a scheduled prompt", Run: s.unschedule},
		{Name: "tz", Args: "[zone|default]", Description: "Show or set the time zone schedules read times in", Run: s.timezone},
	} {
		h.Command(c)
	}
	h.OnStatus(s.status)
	h.Every(time.Second, s.FireDue)
	return nil
}

// notify answers the call c.
func (s *Schedules) notify(ctx context.Context, c ext.Call, text string) {
	s.host.Notify(ctx, c.Lane.Address(), c.MsgID, text)
}

// location is the zone of a lane whose /tz is tz.
func (s *Schedules) location(tz string) *time.Location {
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
func (s *Schedules) laneZone(ctx context.Context, key string) string {
	sl, err := s.st.Lane(ctx, key)
	if err != nil {
		return ""
	}
	return sl.Timezone
}

func (s *Schedules) at(ctx context.Context, c ext.Call) bool {
	loc := s.location(s.laneZone(ctx, c.Lane.Key()))
	due, prompt, err := schedule.ParseAt(c.Args, s.host.Now(), loc)
	if err != nil {
		s.notify(ctx, c, "Usage: /at WHEN PROMPT. "+err.Error())
		return true
	}
	s.add(ctx, c, store.Schedule{Prompt: prompt, NextAt: due, Timezone: loc.String()},
		fmt.Sprintf("at %s", when(due, loc)))
	return true
}

func (s *Schedules) every(ctx context.Context, c ext.Call) bool {
	loc := s.location(s.laneZone(ctx, c.Lane.Key()))
	rule, prompt, err := schedule.ParseEvery(c.Args, loc, s.cfg.MinInterval)
	if err != nil {
		s.notify(ctx, c, "Usage: /every SPEC PROMPT. "+err.Error())
		return true
	}
	now := s.host.Now()
	next := rule.After(now, now, loc)
	s.add(ctx, c, store.Schedule{Rule: rule.String(), Prompt: prompt, NextAt: next, Timezone: loc.String()},
		fmt.Sprintf("%s; next %s", rule, when(next, loc)))
	return true
}

// add stores the schedule the command made and answers with what it is.
func (s *Schedules) add(ctx context.Context, c ext.Call, sc store.Schedule, what string) {
	key := c.Lane.Key()
	sc.SessionKey, sc.CreatorID, sc.CreatorName = key, c.Sender, c.SenderName
	sc.CreatedAt = s.host.Now()
	saved, err := s.st.AddSchedule(ctx, sc, s.cfg.MaxPerLane)
	switch {
	case errors.Is(err, store.ErrLimit):
		s.notify(ctx, c, fmt.Sprintf("This conversation has %d schedules already (schedules.max_per_lane); "+
			"/unschedule one first.", s.cfg.MaxPerLane))
		return
	case err != nil:
		s.log.Error("schedule.add_failed", zap.String("lane", key), zap.Error(err))
		s.notify(ctx, c, "Could not store the schedule: the database refused; nothing was scheduled. Try again.")
		return
	}
	s.log.Info("schedule.added", zap.String("lane", key), zap.Int64("schedule", saved.ID),
		zap.String("rule", saved.Rule), zap.Time("next", saved.NextAt))
	s.notify(ctx, c, fmt.Sprintf("⏰ Scheduled %s, %s: %s", scheduleName(saved.ID), what, saved.Prompt))
}

func scheduleName(id int64) string { return "s" + strconv.FormatInt(id, 10) }

// when shows a due time in the lane's zone.
func when(t time.Time, loc *time.Location) string {
	return t.In(loc).Format("Mon 2 Jan 15:04 MST")
}

func (s *Schedules) list(ctx context.Context, c ext.Call) bool {
	all, err := s.st.Schedules(ctx, c.Lane.Key())
	if err != nil {
		s.log.Error("schedule.list_failed", zap.String("lane", c.Lane.Key()), zap.Error(err))
		s.notify(ctx, c, "Could not read the schedules: the database refused. Try again.")
		return true
	}
	if len(all) == 0 {
		s.notify(ctx, c, "No schedules here. /at WHEN PROMPT or /every SPEC PROMPT makes one.")
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
	s.notify(ctx, c, b.String())
	return true
}

func (s *Schedules) unschedule(ctx context.Context, c ext.Call) bool {
	id, ok := parseScheduleID(c.Args)
	if !ok {
		s.notify(ctx, c, "Usage: /unschedule ID (as /schedules lists them, e.g. s3).")
		return true
	}
	key := c.Lane.Key()
	sc, found, err := s.find(ctx, key, id)
	switch {
	case err != nil:
		s.log.Error("schedule.read_failed", zap.String("lane", key), zap.Error(err))
		s.notify(ctx, c, "Could not read the schedules: the database refused. Try again.")
		return true
	case !found:
		s.notify(ctx, c, fmt.Sprintf("No schedule %s here; /schedules lists them.", scheduleName(id)))
		return true
	}
	if !s.mayRemove(c, sc) {
		s.notify(ctx, c, "Only "+makerOf(sc)+" or an admin can decide this; "+scheduleName(id)+" stays.")
		return true
	}
	if err := s.st.DeleteSchedule(ctx, key, id); err != nil && !errors.Is(err, store.ErrNotFound) {
		s.log.Error("schedule.delete_failed", zap.String("lane", key), zap.Error(err))
		s.notify(ctx, c, "Could not remove the schedule: the database refused; it stays. Try again.")
		return true
	}
	s.log.Info("schedule.removed", zap.String("lane", key), zap.Int64("schedule", id), zap.String("by", c.Sender))
	s.notify(ctx, c, fmt.Sprintf("Removed %s: %s", scheduleName(id), sc.Prompt))
	return true
}

// mayRemove reports whether the sender of c may remove sc: in one
// person's place whoever is there; in a shared room its maker, or an
// admin by the config's list (codex.admins), as an approval is decided.
func (s *Schedules) mayRemove(c ext.Call, sc store.Schedule) bool {
	addr := c.Lane.Address()
	if !ext.GroupPlace(addr.Kind) || sc.CreatorID == "" || c.Sender == sc.CreatorID {
		return true
	}
	return s.host.IsAdmin(chat.Inbound{Address: addr, SenderID: c.Sender})
}

func parseScheduleID(args string) (int64, bool) {
	f := strings.Fields(args)
	if len(f) != 1 {
		return 0, false
	}
	id, err := strconv.ParseInt(strings.TrimPrefix(strings.ToLower(f[0]), "s"), 10, 64)
	return id, err == nil && id > 0
}

func (s *Schedules) find(ctx context.Context, key string, id int64) (store.Schedule, bool, error) {
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

func (s *Schedules) timezone(ctx context.Context, c ext.Call) bool {
	key := c.Lane.Key()
	name := strings.TrimSpace(c.Args)
	if name == "" {
		loc := s.location(s.laneZone(ctx, key))
		s.notify(ctx, c, fmt.Sprintf("Time zone: %s (now %s). /tz ZONE changes it, /tz default goes back to lanes.timezone.",
			loc, s.host.Now().In(loc).Format("15:04 MST")))
		return true
	}
	value := name
	if strings.EqualFold(name, "default") {
		value = ""
	} else if _, err := schedule.LoadLocation(name); err != nil {
		s.notify(ctx, c, err.Error())
		return true
	}
	if err := s.st.SetLaneOption(ctx, key, store.OptionTZ, value); err != nil {
		s.log.Error("schedule.tz_failed", zap.String("lane", key), zap.Error(err))
		s.notify(ctx, c, "Could not change the time zone: the database refused; nothing changed. Try again.")
		return true
	}
	loc := s.location(value)
	s.notify(ctx, c, fmt.Sprintf("Time zone: %s (now %s). Schedules made from now on read times in it.",
		loc, s.host.Now().In(loc).Format("15:04 MST")))
	return true
}

// status adds the lane's schedules to /status.
func (s *Schedules) status(ctx context.Context, sl store.Lane, b *strings.Builder) {
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

// cutRunes is s cut to n characters, the last one an ellipsis.
func cutRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
