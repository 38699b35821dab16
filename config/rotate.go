package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rotate says when a lane's session (its transcript segment) is rotated.
// Rotation is checked when a message arrives, against the lane's last
// message (its last turn), so a lane in steady use is never split mid-way.
// The forms accepted by lanes.rotate are:
//
//	off            never rotate (the default)
//	<duration>     rotate when a message arrives after the lane was idle this long, e.g. 24h or 168h (at least 1m)
//	daily@HH       rotate once a day at HH:00 local time, e.g. daily@04
//	daily@HH:MM    rotate once a day at HH:MM local time, e.g. daily@04:30
type Rotate struct {
	Every  time.Duration // > 0 for the <duration> form: the idle time
	Daily  bool          // true for the daily@ form
	Hour   int           // 0-23, daily form
	Minute int           // 0-59, daily form
}

// Off reports whether rotation is disabled.
func (r Rotate) Off() bool { return r.Every == 0 && !r.Daily }

// String gives back the accepted form.
func (r Rotate) String() string {
	switch {
	case r.Daily:
		return fmt.Sprintf("daily@%02d:%02d", r.Hour, r.Minute)
	case r.Every > 0:
		return r.Every.String()
	}
	return "off"
}

// Next is the first rotation time strictly after lastActive, the time of
// the lane's last message, in lastActive's location: for the <duration>
// form that is lastActive plus the idle time. The zero time means never.
func (r Rotate) Next(lastActive time.Time) time.Time {
	switch {
	case r.Daily:
		y, m, d := lastActive.Date()
		at := time.Date(y, m, d, r.Hour, r.Minute, 0, 0, lastActive.Location())
		if !at.After(lastActive) {
			at = time.Date(y, m, d+1, r.Hour, r.Minute, 0, 0, lastActive.Location())
		}
		return at
	case r.Every > 0:
		return lastActive.Add(r.Every)
	}
	return time.Time{}
}

// ParseRotate parses a lanes.rotate value.
func ParseRotate(s string) (Rotate, error) {
	s = strings.TrimSpace(s)
	switch {
	case s == "" || s == "off":
		return Rotate{}, nil
	case strings.HasPrefix(s, "daily@"):
		return parseDaily(strings.TrimPrefix(s, "daily@"), s)
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return Rotate{}, fmt.Errorf("invalid value %q (use off, an idle duration like 24h, or daily@HH[:MM])", s)
	}
	if d < time.Minute {
		return Rotate{}, fmt.Errorf("idle duration %q is below the 1m minimum", s)
	}
	return Rotate{Every: d}, nil
}

func parseDaily(clock, whole string) (Rotate, error) {
	bad := fmt.Errorf("invalid value %q (use daily@HH or daily@HH:MM, 24-hour local time)", whole)
	hh, mm, hasMinute := strings.Cut(clock, ":")
	hour, err := strconv.Atoi(hh)
	if err != nil || len(hh) == 0 || len(hh) > 2 || hour < 0 || hour > 23 {
		return Rotate{}, bad
	}
	minute := 0
	if hasMinute {
		minute, err = strconv.Atoi(mm)
		if err != nil || len(mm) != 2 || minute < 0 || minute > 59 {
			return Rotate{}, bad
		}
	}
	return Rotate{Daily: true, Hour: hour, Minute: minute}, nil
}
