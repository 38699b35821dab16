package schedule

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

var (
	berlin  = mustLoad("Europe/Berlin")
	newYork = mustLoad("America/New_York")
)

func mustLoad(name string) *time.Location {
	loc, err := LoadLocation(name)
	if err != nil {
		panic(err)
	}
	return loc
}

// at is a wall-clock time in loc, to the minute.
func at(loc *time.Location, y int, mo time.Month, d, h, mi int) time.Time {
	return time.Date(y, mo, d, h, mi, 0, 0, loc)
}

// wantError checks err is a *Error wrapping kind whose message contains
// every part.
func wantError(t *testing.T, err, kind error, parts ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %v", kind)
	}
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T %v is not a *Error", err, err)
	}
	if !errors.Is(err, kind) {
		t.Errorf("error %q is not %v", err, kind)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q does not contain %q", err, p)
		}
	}
}

func TestLoadLocation(t *testing.T) {
	for _, name := range []string{"", "Local"} {
		loc, err := LoadLocation(name)
		if err != nil || loc != time.Local {
			t.Errorf("LoadLocation(%q) = %v, %v; want time.Local", name, loc, err)
		}
	}
	for _, name := range []string{"UTC", "Europe/Berlin", "America/New_York", "Asia/Kathmandu"} {
		loc, err := LoadLocation(name)
		if err != nil || loc.String() != name {
			t.Errorf("LoadLocation(%q) = %v, %v", name, loc, err)
		}
	}
	for _, name := range []string{"Mars/Olympus_Mons", "../../etc/passwd", "/etc/localtime", "europe/berlin x"} {
		loc, err := LoadLocation(name)
		if err == nil {
			t.Errorf("LoadLocation(%q) = %v, want an error", name, loc)
			continue
		}
		want := `unknown time zone "` + name + `" (use an IANA name such as Europe/Berlin)`
		if err.Error() != want {
			t.Errorf("LoadLocation(%q) error %q, want %q", name, err, want)
		}
	}
}

func TestFormatDuration(t *testing.T) {
	for _, c := range []struct {
		d    time.Duration
		want string
	}{
		{30 * time.Minute, "30m"},
		{2 * time.Hour, "2h"},
		{90 * time.Minute, "1h30m"},
		{45 * time.Second, "45s"},
		{time.Hour + 500*time.Millisecond, "1h500ms"},
		{time.Minute + 1500*time.Millisecond, "1m1.5s"},
		{49 * time.Hour, "49h"},
		{time.Nanosecond, "1ns"},
		{0, "0s"},
		{-90 * time.Minute, "-1h30m"},
		{math.MaxInt64, "2562047h47m16.854775807s"},
		{math.MinInt64, "-2562047h47m16.854775808s"},
	} {
		got := FormatDuration(c.d)
		if got != c.want {
			t.Errorf("FormatDuration(%d) = %q, want %q", c.d, got, c.want)
		}
		if back, err := time.ParseDuration(got); err != nil || back != c.d {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", got, back, err, c.d)
		}
	}
}

func TestParseAt(t *testing.T) {
	// Saturday 2026-03-28 10:00 in Berlin, the day before DST starts.
	satBerlin := at(berlin, 2026, 3, 28, 10, 0)
	// Friday 2026-03-06 22:00 in New York, given in UTC.
	friNY := at(newYork, 2026, 3, 6, 22, 0).UTC()
	// Saturday 2026-10-24 23:30 in Berlin, the night DST ends.
	octBerlin := at(berlin, 2026, 10, 24, 23, 30)

	for _, c := range []struct {
		name       string
		args       string
		now        time.Time
		loc        *time.Location
		due        time.Time
		prompt     string
		dueLocName string
	}{
		{"duration", "10m check the build", satBerlin, berlin, satBerlin.Add(10 * time.Minute), "check the build", ""},
		{"compound duration", "1h30m  do   it  ", satBerlin, berlin, satBerlin.Add(90 * time.Minute), "do   it", ""},
		{"fractional duration", "1.5h x", satBerlin, berlin, satBerlin.Add(90 * time.Minute), "x", ""},
		{"seconds", "45s x", satBerlin, berlin, satBerlin.Add(45 * time.Second), "x", ""},
		{"duration across DST is real time", "24h x", satBerlin, berlin, at(berlin, 2026, 3, 29, 11, 0), "x", ""},
		{"multi-line prompt", "2h first line\nsecond line\n", satBerlin, berlin, satBerlin.Add(2 * time.Hour), "first line\nsecond line", ""},
		{"leading space and tab", " \t10m\tx", satBerlin, berlin, satBerlin.Add(10 * time.Minute), "x", ""},

		{"time later today", "15:30 tea", satBerlin, berlin, at(berlin, 2026, 3, 28, 15, 30), "tea", ""},
		{"time one-digit hour", "9:05 x", at(berlin, 2026, 3, 28, 8, 0), berlin, at(berlin, 2026, 3, 28, 9, 5), "x", ""},
		{"time already past: tomorrow, across DST", "09:00 x", satBerlin, berlin, at(berlin, 2026, 3, 29, 9, 0), "x", ""},
		{"time now exactly: tomorrow", "10:00 x", satBerlin, berlin, at(berlin, 2026, 3, 29, 10, 0), "x", ""},
		{"time a minute ahead: today", "10:01 x", satBerlin, berlin, at(berlin, 2026, 3, 28, 10, 1), "x", ""},
		{"time past by seconds: tomorrow", "10:00 x", satBerlin.Add(20 * time.Second), berlin, at(berlin, 2026, 3, 29, 10, 0), "x", ""},
		{"midnight is tomorrow", "00:00 x", satBerlin, berlin, at(berlin, 2026, 3, 29, 0, 0), "x", ""},
		{"time in skipped hour", "02:30 x", satBerlin, berlin, time.Date(2026, 3, 29, 1, 30, 0, 0, time.UTC), "x", ""},
		{"time in the zone, now in UTC", "23:00 x", friNY, newYork, at(newYork, 2026, 3, 6, 23, 0), "x", "America/New_York"},
		{"time tomorrow in the zone, now in UTC", "21:00 x", friNY, newYork, at(newYork, 2026, 3, 7, 21, 0), "x", "America/New_York"},
		{"time after midnight into the DST-end day", "09:00 x", octBerlin, berlin, at(berlin, 2026, 10, 25, 9, 0), "x", ""},
		{"other zone reads differently", "23:00 x", friNY, berlin, at(berlin, 2026, 3, 7, 23, 0), "x", ""},

		{"date and time", "2026-12-24 09:00 presents", satBerlin, berlin, at(berlin, 2026, 12, 24, 9, 0), "presents", "Europe/Berlin"},
		{"date T time", "2026-12-24T9:00 presents", satBerlin, berlin, at(berlin, 2026, 12, 24, 9, 0), "presents", ""},
		{"date and time in New York", "2026-11-01 01:59 x", friNY, newYork, time.Date(2026, 11, 1, 5, 59, 0, 0, time.UTC), "x", ""},
		{"date and time later today", "2026-03-28 10:01 x", satBerlin, berlin, at(berlin, 2026, 3, 28, 10, 1), "x", ""},
		{"nil loc is Local", "10m x", satBerlin, nil, satBerlin.Add(10 * time.Minute), "x", "Local"},
	} {
		t.Run(c.name, func(t *testing.T) {
			due, prompt, err := ParseAt(c.args, c.now, c.loc)
			if err != nil {
				t.Fatalf("ParseAt(%q): %v", c.args, err)
			}
			if !due.Equal(c.due) || prompt != c.prompt {
				t.Errorf("ParseAt(%q) = %v, %q; want %v, %q", c.args, due, prompt, c.due, c.prompt)
			}
			if c.dueLocName != "" && due.Location().String() != c.dueLocName {
				t.Errorf("due %v is in %v, want %s", due, due.Location(), c.dueLocName)
			}
		})
	}
}

func TestParseAtErrors(t *testing.T) {
	now := at(berlin, 2026, 3, 28, 10, 0)
	for _, c := range []struct {
		args  string
		kind  error
		parts []string
	}{
		{"", ErrSyntax, []string{"missing the time and the prompt", "10m", "15:30", "2026-12-24 09:00"}},
		{"   ", ErrSyntax, []string{"missing the time"}},
		{"tomorrowish remind me", ErrSyntax, []string{`can't read "tomorrowish" as a time: ` + atForms}},
		{"10 x", ErrSyntax, []string{`can't read "10"`, atForms}},
		{"-5m x", ErrSyntax, []string{`"-5m" is not in the future`, atForms}},
		{"0s x", ErrSyntax, []string{`"0s" is not in the future`}},
		{"25:00 x", ErrSyntax, []string{`can't read "25:00"`, atForms}},
		{"12:60 x", ErrSyntax, []string{`can't read "12:60"`}},
		{"12:5 x", ErrSyntax, []string{`can't read "12:5"`}},
		{"123:00 x", ErrSyntax, []string{`can't read "123:00"`}},
		{"15.30 x", ErrSyntax, []string{`can't read "15.30"`}},
		{"2026-13-01 09:00 x", ErrSyntax, []string{`can't read "2026-13-01"`}},
		{"2026-02-30 09:00 x", ErrSyntax, []string{`can't read "2026-02-30"`}},
		{"2026-12-24 9am x", ErrSyntax, []string{`can't read "2026-12-24 9am" as a date and time`, atForms}},
		{"2026-12-24T x", ErrSyntax, []string{`"2026-12-24T" needs a time of day too`}},
		{"2026-12-24T9 x", ErrSyntax, []string{`can't read "2026-12-24T9" as a date and time`}},
		{"2026-12-24", ErrSyntax, []string{`"2026-12-24" needs a time of day too`}},
		{"24/12/2026 09:00 x", ErrSyntax, []string{`can't read "24/12/2026"`}},

		{"2025-12-24 09:00 x", ErrPast, []string{"2025-12-24 09:00 (Europe/Berlin) is in the past"}},
		{"2026-03-28 10:00 x", ErrPast, []string{"2026-03-28 10:00 (Europe/Berlin) is in the past"}},
		{"2026-03-28T09:59 x", ErrPast, []string{"2026-03-28 09:59"}},

		{"10m", ErrNoPrompt, []string{`missing the prompt after "10m"`}},
		{"10m   \n ", ErrNoPrompt, []string{"missing the prompt"}},
		{"15:30", ErrNoPrompt, []string{`missing the prompt after "15:30"`}},
		{"2026-12-24 09:00", ErrNoPrompt, []string{`missing the prompt after "2026-12-24 09:00"`}},
		{"2026-12-24T09:00 ", ErrNoPrompt, []string{`after "2026-12-24T09:00"`}},
	} {
		t.Run(c.args, func(t *testing.T) {
			due, prompt, err := ParseAt(c.args, now, berlin)
			wantError(t, err, c.kind, c.parts...)
			if !due.IsZero() || prompt != "" {
				t.Errorf("ParseAt(%q) returned %v, %q with the error", c.args, due, prompt)
			}
		})
	}

	// The brief's example, word for word.
	_, _, err := ParseAt("tomorrowish x", now, berlin)
	if want := `can't read "tomorrowish" as a time: use a duration (10m, 2h), a time (15:30) or a date and time (2026-12-24 09:00)`; err == nil || err.Error() != want {
		t.Errorf("error %v, want %q", err, want)
	}
}

func TestParseEvery(t *testing.T) {
	for _, c := range []struct {
		args   string
		want   string // the rule's String
		kind   Kind
		prompt string
	}{
		{"30m check the build", "every 30m", KindInterval, "check the build"},
		{"2h x", "every 2h", KindInterval, "x"},
		{"90m x", "every 1h30m", KindInterval, "x"},
		{"1.5h x", "every 1h30m", KindInterval, "x"},
		{"1m x", "every 1m", KindInterval, "x"},
		{"48h x", "every 48h", KindInterval, "x"},
		{"1h0m0s x", "every 1h", KindInterval, "x"},

		{"day 09:00 news", "every day 09:00", KindCalendar, "news"},
		{"DAY 9:00 news", "every day 09:00", KindCalendar, "news"},
		{"day 00:00 x", "every day 00:00", KindCalendar, "x"},
		{"day 23:59 x", "every day 23:59", KindCalendar, "x"},
		{"weekdays 09:00 standup", "every weekdays 09:00", KindCalendar, "standup"},
		{"Weekday 08:30 x", "every weekdays 08:30", KindCalendar, "x"},
		{"mon 09:00 x", "every mon 09:00", KindCalendar, "x"},
		{"Monday 09:00 x", "every mon 09:00", KindCalendar, "x"},
		{"SUNDAY 18:00 x", "every sun 18:00", KindCalendar, "x"},
		{"mon,wed,fri 09:00 gym", "every mon,wed,fri 09:00", KindCalendar, "gym"},
		{"Fri,mon 09:00 x", "every mon,fri 09:00", KindCalendar, "x"},
		{"sunday,Saturday 10:15 x", "every sat,sun 10:15", KindCalendar, "x"},
		{"tuesday,thu 7:05 x", "every tue,thu 07:05", KindCalendar, "x"},
		{"mon,mon 09:00 x", "every mon 09:00", KindCalendar, "x"},
		{"mon,tue,wed,thu,fri 09:00 x", "every weekdays 09:00", KindCalendar, "x"},
		{"sun,mon,tue,wed,thu,fri,sat 09:00 x", "every day 09:00", KindCalendar, "x"},

		{"0 9 * * 1-5 standup", "cron 0 9 * * 1-5", KindCron, "standup"},
		{"*/15 9-17 * * mon-fri x", "cron */15 9-17 * * mon-fri", KindCron, "x"},
		{"0 9 * * MON-FRI x", "cron 0 9 * * mon-fri", KindCron, "x"},
		{"0 0 1 */2 * x", "cron 0 0 1 */2 *", KindCron, "x"},
		{"0 12 1,15 * * pay", "cron 0 12 1,15 * *", KindCron, "pay"},
		{"30 8 * JAN-mar 1 x", "cron 30 8 * jan-mar 1", KindCron, "x"},
		{"0   9  *\t* 1-5   x", "cron 0 9 * * 1-5", KindCron, "x"},
		{"0 9-17/2 * * * x", "cron 0 9-17/2 * * *", KindCron, "x"},
		{"0 0 29 2 * leap", "cron 0 0 29 2 *", KindCron, "leap"},
		{"0 9 * * ? x", "cron 0 9 * * ?", KindCron, "x"},
		{"cron 0 9 * * 1-5 typed like shown", "cron 0 9 * * 1-5", KindCron, "typed like shown"},
		{"0 9 * * * things to do", "cron 0 9 * * *", KindCron, "things to do"},
		{"0 9 * * 1-5 multi\nline", "cron 0 9 * * 1-5", KindCron, "multi\nline"},
	} {
		t.Run(c.args, func(t *testing.T) {
			r, prompt, err := ParseEvery(c.args, berlin, time.Minute)
			if err != nil {
				t.Fatalf("ParseEvery(%q): %v", c.args, err)
			}
			if r.String() != c.want || r.Kind() != c.kind || prompt != c.prompt {
				t.Errorf("ParseEvery(%q) = %q (kind %d), %q; want %q (kind %d), %q", c.args, r, r.Kind(), prompt, c.want, c.kind, c.prompt)
			}
			if (r.Interval() != 0) != (c.kind == KindInterval) || r.IsZero() {
				t.Errorf("Interval() = %v, IsZero() = %v for %q", r.Interval(), r.IsZero(), r)
			}
		})
	}
}

func TestParseEveryErrors(t *testing.T) {
	for _, c := range []struct {
		args  string
		min   time.Duration
		kind  error
		parts []string
	}{
		{"", time.Minute, ErrSyntax, []string{"missing the schedule and the prompt", everyForms[4:]}},
		{"fortnightly x", time.Minute, ErrSyntax, []string{`can't read "fortnightly" as a schedule: ` + everyForms}},
		{"30 check the build", time.Minute, ErrSyntax, []string{`can't read "30" as a schedule (an interval needs a unit, as in 30m)`, everyForms}},
		{"-5m x", time.Minute, ErrSyntax, []string{`"-5m"`, "must be positive", everyForms}},
		{"0s x", 0, ErrSyntax, []string{`"0s"`, "must be positive"}},
		{"day x", time.Minute, ErrSyntax, []string{`can't read "x" as a time of day after "day"`, "day 09:00"}},
		{"day", time.Minute, ErrSyntax, []string{`"day" needs a time of day, as in day 09:00`}},
		{"mon 9am x", time.Minute, ErrSyntax, []string{`can't read "9am" as a time of day after "mon"`}},
		{"mon 24:00 x", time.Minute, ErrSyntax, []string{`can't read "24:00"`}},
		{"mon, wed 09:00 x", time.Minute, ErrSyntax, []string{`can't read "mon,"`, everyForms}},
		{"mon,,wed 09:00 x", time.Minute, ErrSyntax, []string{`can't read "mon,,wed"`}},
		{"mo 09:00 x", time.Minute, ErrSyntax, []string{`can't read "mo"`}},
		{"weekends 09:00 x", time.Minute, ErrSyntax, []string{`can't read "weekends"`}},
		{"@daily x", time.Minute, ErrSyntax, []string{`can't read "@daily"`, everyForms}},
		{"@every 5m x", time.Minute, ErrSyntax, []string{`can't read "@every"`}},
		{"TZ=UTC 0 9 * * * x", time.Minute, ErrSyntax, []string{`can't read "TZ=UTC"`}},
		{"cron TZ=UTC 0 9 * * x", time.Minute, ErrSyntax, []string{"minute field", `"TZ=UTC"`}},

		{"0 9 * * x", time.Minute, ErrSyntax, []string{`can't read "0 9 * * x" as a cron expression`, `day of week field "x"`}},
		{"60 9 * * * x", time.Minute, ErrSyntax, []string{`minute field "60" is not valid (0-59)`, "0 9 * * 1-5"}},
		{"0 24 * * * x", time.Minute, ErrSyntax, []string{`hour field "24"`}},
		{"0 9 0 * * x", time.Minute, ErrSyntax, []string{`day of month field "0"`}},
		{"0 9 * 13 * x", time.Minute, ErrSyntax, []string{`month field "13"`}},
		{"0 9 * * 7 x", time.Minute, ErrSyntax, []string{`day of week field "7"`}},
		{"0 9 * * fri-mon x", time.Minute, ErrSyntax, []string{`day of week field "fri-mon"`}},
		{"*/0 * * * * x", time.Minute, ErrSyntax, []string{`minute field "*/0"`}},
		{"0 9 * *", time.Minute, ErrSyntax, []string{`can't read "0 9 * *" as a cron expression: it has exactly five fields`}},
		{"cron 0 9", time.Minute, ErrSyntax, []string{`can't read "0 9" as a cron expression: it has exactly five fields`}},
		{"0 0 9 * * 1-5 x", time.Minute, ErrSyntax, []string{`can't read "0 0 9 * * 1-5" as a cron expression`, "exactly five fields", "no seconds"}},
		{"*/10 * * * * * x", time.Minute, ErrSyntax, []string{"exactly five fields"}},
		{"0 9 * * * mon x", time.Minute, ErrSyntax, []string{"exactly five fields", `if "mon" begins the prompt, reword it`}},
		{"0 0 30 2 * x", time.Minute, ErrNeverFires, []string{`cron "0 0 30 2 *" never fires`}},
		{"0 0 31 4,6,9,11 * x", time.Minute, ErrNeverFires, []string{"never fires"}},

		{"30s x", time.Minute, ErrTooOften, []string{"every 30s is more often than schedules.min_interval (1m)"}},
		{"59s x", time.Minute, ErrTooOften, []string{"every 59s is more often than schedules.min_interval (1m)"}},
		{"4m x", 5 * time.Minute, ErrTooOften, []string{"every 4m is more often than schedules.min_interval (5m)"}},
		{"* * * * * x", 5 * time.Minute, ErrTooOften, []string{"cron * * * * * can fire 1m apart, more often than schedules.min_interval (5m)"}},
		{"*/2 * * * * x", 5 * time.Minute, ErrTooOften, []string{"2m apart"}},
		{"0,1 9 * * * x", 5 * time.Minute, ErrTooOften, []string{"1m apart"}},
		{"0 0,23 * * * x", 2 * time.Hour, ErrTooOften, []string{"1h apart"}},         // 23:00 to the next day's 00:00
		{"59 23 31 * * x", 745 * time.Hour, ErrTooOften, []string{"744h apart"}},     // Jul 31 to Aug 31
		{"0 9 28 2,3 * x", 700 * time.Hour, ErrTooOften, []string{"672h apart"}},     // Feb 28 to Mar 28
		{"59 23 28 2 * x", 8761 * time.Hour, ErrTooOften, []string{"8760h apart"}},   // a year (2001 to 2002)
		{"0,59 0,23 1,31 * * x", 2 * time.Minute, ErrTooOften, []string{"1m apart"}}, // 00:00, 00:59 ...
		{"0 0,23 1,31 * * x", 2 * time.Hour, ErrTooOften, []string{"1h apart"}},      // Jan 31 23:00 to Feb 1 00:00
		{"mon,tue 09:00 x", 48 * time.Hour, ErrTooOften, []string{"every mon,tue 09:00 can fire 24h apart"}},
		{"weekdays 09:00 x", 25 * time.Hour, ErrTooOften, []string{"24h apart"}},
		{"sat,mon 09:00 x", 49 * time.Hour, ErrTooOften, []string{"48h apart"}},

		{"30m", time.Minute, ErrNoPrompt, []string{`missing the prompt after "30m"`}},
		{"day 09:00   ", time.Minute, ErrNoPrompt, []string{`missing the prompt after "day 09:00"`}},
		{"0 9 * * 1-5", time.Minute, ErrNoPrompt, []string{`missing the prompt after "0 9 * * 1-5"`}},
	} {
		t.Run(c.args, func(t *testing.T) {
			r, prompt, err := ParseEvery(c.args, berlin, c.min)
			wantError(t, err, c.kind, c.parts...)
			if !r.IsZero() || prompt != "" {
				t.Errorf("ParseEvery(%q) returned %q, %q with the error", c.args, r, prompt)
			}
		})
	}
}

func TestParseEveryMinIntervalAccepted(t *testing.T) {
	for _, c := range []struct {
		args string
		min  time.Duration
	}{
		{"1m x", time.Minute},
		{"1ns x", 0},
		{"30s x", -time.Minute},
		{"* * * * * x", time.Minute},
		{"* * * * * x", 0},
		{"*/5 * * * * x", 5 * time.Minute},
		{"day 09:00 x", 24 * time.Hour}, // wall clock: the 23h DST day does not count
		{"0 9 * * * x", 24 * time.Hour},
		{"sat,mon 09:00 x", 48 * time.Hour},
		{"0 0,23 * * * x", time.Hour},
		{"59 23 31 * * x", 744 * time.Hour},
		{"0 0 29 2 * x", 4 * 365 * 24 * time.Hour},
	} {
		if _, _, err := ParseEvery(c.args, berlin, c.min); err != nil {
			t.Errorf("ParseEvery(%q, min %v): %v", c.args, c.min, err)
		}
	}
}

func TestRuleRoundTrip(t *testing.T) {
	for _, args := range []string{
		"30m", "2h", "90m", "1.5h", "45s", "1h0.5s", "1ns", "2562047h47m16.854775807s",
		"day 09:00", "Day 0:00", "weekdays 23:59", "weekday 09:00", "mon 09:00", "sunday 12:00",
		"mon,wed,fri 09:00", "sat,sun 10:15", "fri,thu,wed,tue,mon 08:00", "sun,sat,fri,thu,wed,tue,mon 08:00",
		"0 9 * * 1-5", "*/15 9-17 * * MON-FRI", "0 0 1 */2 *", "0 12 1,15 * *", "30 8 * Jan-Mar 1",
		"0 0 29 2 *", "0 9 * * ?", "cron 5 4 * * sun", "* * * * *", "0-59/7 1,2,3 10-20/3 feb,oct 0-6",
	} {
		r, _, err := ParseEvery(args+" prompt", newYork, 0)
		if err != nil {
			t.Errorf("ParseEvery(%q): %v", args, err)
			continue
		}
		s := r.String()
		back, err := ParseRule(s)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", s, err)
			continue
		}
		if back != r || back.String() != s {
			t.Errorf("ParseRule(%q) = %q (%+v), want %+v", s, back, back, r)
		}
		// The canonical text is itself accepted by /every once the
		// leading "every " is dropped (cron rules keep their word).
		again, _, err := ParseEvery(strings.TrimPrefix(s, "every ")+" prompt", berlin, 0)
		if err != nil || again != r {
			t.Errorf("ParseEvery(canonical %q) = %q, %v; want %q", s, again, err, r)
		}
	}
}

func TestParseRule(t *testing.T) {
	for s, want := range map[string]string{
		"every 30m":           "every 30m",
		"  every 90m ":        "every 1h30m",
		"every Monday 9:00":   "every mon 09:00",
		"every day 09:00":     "every day 09:00",
		"cron 0 9 * * 1-5":    "cron 0 9 * * 1-5",
		"cron  0 9 * * MON ":  "cron 0 9 * * mon",
		"every weekdays 9:30": "every weekdays 09:30",
	} {
		r, err := ParseRule(s)
		if err != nil || r.String() != want {
			t.Errorf("ParseRule(%q) = %q, %v; want %q", s, r, err, want)
		}
	}
	for _, s := range []string{
		"", "every", "every ", "cron", "30m", "day 09:00", "0 9 * * 1-5", "hourly",
		"every 30m x", "every day 09:00 x", "every 0 9 * * 1-5", "every cron 0 9 * * *",
		"cron 0 9 * *", "cron 0 9 * * * *", "cron 0 0 30 2 *", "cron @daily", "cron 0 9 * * x",
		"every -5m", "every 0s", "every mon", "Every 30m",
	} {
		if r, err := ParseRule(s); err == nil {
			t.Errorf("ParseRule(%q) = %q, want an error", s, r)
		} else {
			var e *Error
			if !errors.As(err, &e) {
				t.Errorf("ParseRule(%q) error %T is not a *Error", s, err)
			}
		}
	}
	// No minimum interval when reading a stored rule back.
	if r, err := ParseRule("every 1s"); err != nil || r.Interval() != time.Second {
		t.Errorf("ParseRule(every 1s) = %q, %v", r, err)
	}
}

func TestZeroRule(t *testing.T) {
	var r Rule
	now := at(berlin, 2026, 3, 28, 10, 0)
	if !r.IsZero() || r.String() != "" || r.Kind() != 0 || !r.After(now, now, berlin).IsZero() {
		t.Errorf("zero Rule: IsZero %v, String %q, After %v", r.IsZero(), r, r.After(now, now, berlin))
	}
}

func mustRule(t *testing.T, s string) Rule {
	t.Helper()
	r, err := ParseRule(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestAfterInterval(t *testing.T) {
	created := at(berlin, 2026, 1, 1, 0, 0)
	for _, c := range []struct {
		name      string
		rule      string
		prev, now time.Time
		want      time.Time
	}{
		{"first firing", "every 30m", created, created, created.Add(30 * time.Minute)},
		{"on time", "every 30m", at(berlin, 2026, 3, 10, 9, 0), at(berlin, 2026, 3, 10, 9, 0), at(berlin, 2026, 3, 10, 9, 30)},
		{"late firing does not drift", "every 30m", at(berlin, 2026, 3, 10, 9, 0), at(berlin, 2026, 3, 10, 9, 7), at(berlin, 2026, 3, 10, 9, 30)},
		{"catch-up: prev far in the past", "every 30m", created, at(berlin, 2026, 3, 10, 12, 17), at(berlin, 2026, 3, 10, 12, 30)},
		{"catch-up: now on the grid is not after it", "every 30m", created, at(berlin, 2026, 3, 10, 12, 30), at(berlin, 2026, 3, 10, 13, 0)},
		{"catch-up across years", "every 7h", at(berlin, 2000, 1, 1, 0, 0), at(berlin, 2026, 3, 10, 12, 0),
			at(berlin, 2000, 1, 1, 0, 0).Add(time.Duration(at(berlin, 2026, 3, 10, 12, 0).Sub(at(berlin, 2000, 1, 1, 0, 0))/(7*time.Hour)+1) * 7 * time.Hour)},
		{"prev after now", "every 1h", at(berlin, 2026, 3, 10, 12, 0), at(berlin, 2026, 3, 10, 11, 0), at(berlin, 2026, 3, 10, 13, 0)},
		{"zero prev counts from now", "every 1h", time.Time{}, at(berlin, 2026, 3, 10, 11, 5), at(berlin, 2026, 3, 10, 12, 5)},
		{"real time across DST start", "every 1h", at(berlin, 2026, 3, 29, 1, 0), at(berlin, 2026, 3, 29, 1, 0), at(berlin, 2026, 3, 29, 3, 0)},
		{"real time across DST end", "every 1h", at(berlin, 2026, 10, 25, 1, 30), at(berlin, 2026, 10, 25, 1, 30), time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC)},
		{"24h is not 'same time tomorrow' across DST", "every 24h", at(newYork, 2026, 3, 7, 9, 0), at(newYork, 2026, 3, 7, 9, 0), at(newYork, 2026, 3, 8, 10, 0)},
		{"seconds grid", "every 45s", at(berlin, 2026, 3, 10, 9, 0), at(berlin, 2026, 3, 10, 9, 1), at(berlin, 2026, 3, 10, 9, 0).Add(90 * time.Second)},
		{"prev in the year 1", "every 1h", time.Date(1, 1, 1, 0, 0, 1, 0, time.UTC), at(berlin, 2026, 3, 10, 9, 0).Add(time.Second), time.Time{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := mustRule(t, c.rule).After(c.prev, c.now, berlin)
			if !got.After(c.now) {
				t.Fatalf("After = %v, not after now %v", got, c.now)
			}
			if c.want.IsZero() { // only: strictly after now, within one interval
				if got.Sub(c.now) > mustRule(t, c.rule).Interval() {
					t.Errorf("After = %v, more than an interval after now %v", got, c.now)
				}
				return
			}
			if !got.Equal(c.want) {
				t.Errorf("After(%v, %v) = %v, want %v", c.prev, c.now, got, c.want)
			}
			if got.Location() != berlin {
				t.Errorf("After is in %v, want Europe/Berlin", got.Location())
			}
		})
	}
}

func TestAfterCalendar(t *testing.T) {
	for _, c := range []struct {
		name      string
		rule      string
		loc       *time.Location
		prev, now time.Time
		want      []time.Time // successive firings, each fed back as prev and now
	}{
		{"daily across DST start (23h day)", "every day 09:00", berlin,
			at(berlin, 2026, 3, 28, 9, 0), at(berlin, 2026, 3, 28, 9, 0),
			[]time.Time{time.Date(2026, 3, 29, 7, 0, 0, 0, time.UTC), time.Date(2026, 3, 30, 7, 0, 0, 0, time.UTC)}},
		{"daily across DST end (25h day)", "every day 09:00", berlin,
			at(berlin, 2026, 10, 24, 9, 0), at(berlin, 2026, 10, 24, 9, 0),
			[]time.Time{time.Date(2026, 10, 25, 8, 0, 0, 0, time.UTC), time.Date(2026, 10, 26, 8, 0, 0, 0, time.UTC)}},
		{"daily in the skipped hour does not fire that day", "every day 02:30", berlin,
			at(berlin, 2026, 3, 28, 2, 30), at(berlin, 2026, 3, 28, 2, 30),
			[]time.Time{at(berlin, 2026, 3, 30, 2, 30), at(berlin, 2026, 3, 31, 2, 30)}},
		{"daily in the repeated hour fires once", "every day 02:30", berlin,
			at(berlin, 2026, 10, 24, 2, 30), at(berlin, 2026, 10, 24, 2, 30),
			[]time.Time{time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), time.Date(2026, 10, 26, 1, 30, 0, 0, time.UTC)}},
		{"every half hour through the repeated hour", "cron */30 * * * *", berlin,
			at(berlin, 2026, 10, 25, 1, 45), at(berlin, 2026, 10, 25, 1, 45),
			[]time.Time{
				time.Date(2026, 10, 25, 0, 0, 0, 0, time.UTC), // 02:00 CEST
				time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC),
				time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC), // 02:00 CET
				time.Date(2026, 10, 25, 1, 30, 0, 0, time.UTC),
				time.Date(2026, 10, 25, 2, 0, 0, 0, time.UTC), // 03:00 CET
			}},
		{"New York daily across DST start", "every day 09:00", newYork,
			at(newYork, 2026, 3, 7, 9, 0), at(newYork, 2026, 3, 7, 9, 0),
			[]time.Time{time.Date(2026, 3, 8, 13, 0, 0, 0, time.UTC), time.Date(2026, 3, 9, 13, 0, 0, 0, time.UTC)}},
		{"New York repeated 01:30 fires once", "every day 01:30", newYork,
			at(newYork, 2026, 10, 31, 1, 30), at(newYork, 2026, 10, 31, 1, 30),
			[]time.Time{time.Date(2026, 11, 1, 5, 30, 0, 0, time.UTC), time.Date(2026, 11, 2, 6, 30, 0, 0, time.UTC)}},
		{"weekdays skip the weekend", "every weekdays 09:00", berlin,
			at(berlin, 2026, 3, 26, 9, 0), at(berlin, 2026, 3, 26, 9, 0), // Thursday
			[]time.Time{at(berlin, 2026, 3, 27, 9, 0), at(berlin, 2026, 3, 30, 9, 0), at(berlin, 2026, 3, 31, 9, 0)}},
		{"weekdays from a Saturday", "every weekdays 09:00", newYork,
			at(newYork, 2026, 3, 6, 9, 0), at(newYork, 2026, 3, 7, 12, 0),
			[]time.Time{at(newYork, 2026, 3, 9, 9, 0)}},
		{"cron weekdays skip the weekend", "cron 0 9 * * 1-5", newYork,
			at(newYork, 2026, 3, 6, 9, 0), at(newYork, 2026, 3, 6, 9, 0), // Friday before DST
			[]time.Time{at(newYork, 2026, 3, 9, 9, 0), at(newYork, 2026, 3, 10, 9, 0)}},
		{"mon,wed,fri", "every mon,wed,fri 18:00", berlin,
			at(berlin, 2026, 3, 27, 18, 0), at(berlin, 2026, 3, 27, 18, 0), // Friday
			[]time.Time{at(berlin, 2026, 3, 30, 18, 0), at(berlin, 2026, 4, 1, 18, 0), at(berlin, 2026, 4, 3, 18, 0), at(berlin, 2026, 4, 6, 18, 0)}},
		{"later today", "every day 09:00", berlin,
			at(berlin, 2026, 3, 10, 9, 0).Add(-24 * time.Hour), at(berlin, 2026, 3, 10, 8, 59).Add(59 * time.Second),
			[]time.Time{at(berlin, 2026, 3, 10, 9, 0)}},
		{"long overdue: after now, no burst", "every day 09:00", berlin,
			at(berlin, 2026, 1, 1, 9, 0), at(berlin, 2026, 3, 10, 12, 0),
			[]time.Time{at(berlin, 2026, 3, 11, 9, 0)}},
		{"now within the minute is past it", "every day 09:00", berlin,
			at(berlin, 2026, 3, 9, 9, 0), at(berlin, 2026, 3, 10, 9, 0).Add(500 * time.Millisecond),
			[]time.Time{at(berlin, 2026, 3, 11, 9, 0)}},
		{"prev after now", "every day 09:00", berlin,
			at(berlin, 2026, 3, 11, 9, 0), at(berlin, 2026, 3, 10, 12, 0),
			[]time.Time{at(berlin, 2026, 3, 12, 9, 0)}},
		{"leap day", "cron 0 0 29 2 *", berlin,
			at(berlin, 2026, 3, 1, 0, 0), at(berlin, 2026, 3, 1, 0, 0),
			[]time.Time{at(berlin, 2028, 2, 29, 0, 0), at(berlin, 2032, 2, 29, 0, 0)}},
		{"day of month or day of week", "cron 0 9 13 * fri", berlin,
			at(berlin, 2026, 3, 12, 9, 0), at(berlin, 2026, 3, 12, 9, 0), // Thursday
			[]time.Time{at(berlin, 2026, 3, 13, 9, 0), at(berlin, 2026, 3, 20, 9, 0), at(berlin, 2026, 3, 27, 9, 0), at(berlin, 2026, 4, 3, 9, 0)}},
		{"zone given as UTC now", "every day 09:00", newYork,
			time.Time{}, time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC), // 08:00 EDT
			[]time.Time{at(newYork, 2026, 3, 10, 9, 0)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := mustRule(t, c.rule)
			prev, now := c.prev, c.now
			for i, want := range c.want {
				got := r.After(prev, now, c.loc)
				if !got.Equal(want) {
					t.Fatalf("firing %d: After(%v, %v) = %v, want %v", i, prev, now, got, want.In(c.loc))
				}
				if got.Location() != c.loc {
					t.Errorf("firing %d: %v is in %v, want %v", i, got, got.Location(), c.loc)
				}
				prev, now = got, got
			}
		})
	}
}

func TestAfterNilLoc(t *testing.T) {
	now := time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)
	if got := mustRule(t, "every day 09:00").After(now, now, nil); got.Location() != time.Local || !got.After(now) {
		t.Errorf("After with nil loc = %v", got)
	}
}

func FuzzParseEvery(f *testing.F) {
	for _, s := range []string{
		"30m x", "1h30m y", "day 09:00 z", "weekdays 9:00 a", "mon,wed,fri 09:00 b", "Sunday 23:59 c",
		"0 9 * * 1-5 d", "*/15 9-17 * * MON-FRI e", "cron 0 0 29 2 * f", "0 0 9 * * 1-5 g", "* * * * * h",
		"0 0 30 2 * i", "@daily j", "TZ=UTC 0 9 * * * k", "cron TZ= l", "60 * * * * m", "1ns n", "-5m o",
		"0,1-5/2,*/7 * 1-31/3 jan-dec/2 sun-sat/2 p", "", "mon,", "0 9 * * 1-5",
	} {
		f.Add(s)
	}
	now := time.Date(2026, 3, 28, 10, 0, 0, 0, berlin)
	f.Fuzz(func(t *testing.T, args string) {
		for _, min := range []time.Duration{0, time.Minute} {
			r, prompt, err := ParseEvery(args, berlin, min)
			if err != nil {
				var e *Error
				if !errors.As(err, &e) || e.Kind == nil || e.Msg == "" {
					t.Fatalf("ParseEvery(%q): error %#v is not a *Error with a kind", args, err)
				}
				if !r.IsZero() || prompt != "" {
					t.Fatalf("ParseEvery(%q) returned %q, %q with the error", args, r, prompt)
				}
				continue
			}
			if prompt == "" || strings.TrimSpace(prompt) != prompt {
				t.Fatalf("ParseEvery(%q): prompt %q", args, prompt)
			}
			s := r.String()
			back, err := ParseRule(s)
			if err != nil {
				t.Fatalf("ParseEvery(%q) = %q, which ParseRule refuses: %v", args, s, err)
			}
			if back != r || back.String() != s {
				t.Fatalf("ParseRule(%q) = %q, want %q", s, back, s)
			}
			next := r.After(now, now, berlin)
			if !next.After(now) {
				t.Fatalf("%q.After(%v) = %v", s, now, next)
			}
			if r.Kind() == KindInterval && r.Interval() < min {
				t.Fatalf("%q accepted with min %v", s, min)
			}
		}
	})
}
