package schedule

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/robfig/cron/v3"
)

// everyForms lists what /every's SPEC may be, for error messages.
const everyForms = "use an interval (30m, 2h), day 09:00, weekdays 09:00, a weekday (mon 09:00, mon,wed,fri 09:00) or a cron expression (0 9 * * 1-5)"

// Kind tells the three sorts of Rule apart.
type Kind uint8

const (
	// KindInterval fires every fixed duration: "every 30m".
	KindInterval Kind = iota + 1
	// KindCalendar fires at a time of day on some weekdays: "every day
	// 09:00", "every weekdays 09:00", "every mon,wed 09:00".
	KindCalendar
	// KindCron fires on a five-field cron expression: "cron 0 9 * * 1-5".
	KindCron
)

// Rule is a recurring schedule. The zero Rule is no schedule: its String
// is "" and After returns the zero time. Rules are comparable with ==:
// two rules are equal exactly when their String is.
type Rule struct {
	kind     Kind
	interval time.Duration // KindInterval
	days     uint8         // KindCalendar: bit 1<<time.Weekday per day
	hour     uint8         // KindCalendar
	minute   uint8         // KindCalendar
	expr     string        // KindCron: the canonical five fields
	spec     cron.SpecSchedule
}

// Kind is the rule's sort; 0 for the zero Rule.
func (r Rule) Kind() Kind { return r.kind }

// Interval is an interval rule's period, 0 for other rules.
func (r Rule) Interval() time.Duration { return r.interval }

// IsZero reports whether r is the zero Rule.
func (r Rule) IsZero() bool { return r.kind == 0 }

const (
	allDays  = 1<<7 - 1
	weekdays = allDays &^ (1<<time.Saturday | 1<<time.Sunday)
)

// dayNames are the accepted day names, mon..sun, each in short and full.
var dayNames = map[string]time.Weekday{
	"mon": time.Monday, "monday": time.Monday,
	"tue": time.Tuesday, "tuesday": time.Tuesday,
	"wed": time.Wednesday, "wednesday": time.Wednesday,
	"thu": time.Thursday, "thursday": time.Thursday,
	"fri": time.Friday, "friday": time.Friday,
	"sat": time.Saturday, "saturday": time.Saturday,
	"sun": time.Sunday, "sunday": time.Sunday,
}

// weekOrder is the order days are written in, Monday first.
var weekOrder = [7]time.Weekday{time.Monday, time.Tuesday, time.Wednesday, time.Thursday, time.Friday, time.Saturday, time.Sunday}

// String is the canonical text stored in the database and shown to users:
// "every 30m", "every 1h30m", "every day 09:00", "every weekdays 09:00",
// "every mon,wed 09:00", "cron 0 9 * * 1-5". ParseRule reads it back.
func (r Rule) String() string {
	switch r.kind {
	case KindInterval:
		return "every " + FormatDuration(r.interval)
	case KindCalendar:
		return fmt.Sprintf("every %s %02d:%02d", daysString(r.days), r.hour, r.minute)
	case KindCron:
		return "cron " + r.expr
	}
	return ""
}

// daysString writes a day set: "day" (all seven), "weekdays" (Monday to
// Friday) or a comma list in week order, "mon,wed,fri".
func daysString(days uint8) string {
	switch days {
	case allDays:
		return "day"
	case weekdays:
		return "weekdays"
	}
	var names []string
	for _, d := range weekOrder {
		if days&(1<<d) != 0 {
			names = append(names, strings.ToLower(d.String()[:3]))
		}
	}
	return strings.Join(names, ",")
}

// ParseEvery parses "/every"'s arguments: SPEC then the prompt. SPEC is
//   - an interval "30m", "2h", "1h30m" (a positive Go duration);
//   - "day HH:MM", "weekdays HH:MM" (also "weekday"), or days "mon HH:MM":
//     mon..sun or full names, case-insensitive, or a comma list
//     "mon,wed,fri 09:00";
//   - a five-field cron expression "0 9 * * 1-5" (minute hour day-of-month
//     month day-of-week, robfig/cron's standard syntax without
//     descriptors), optionally after the word "cron".
//
// A rule that can fire less than minInterval after its previous firing is
// refused (minInterval <= 0: no limit): for an interval its period, for
// calendar and cron rules the shortest wall-clock gap between two
// consecutive firings (computed exactly from the expression; the hour a
// DST change adds or removes is not counted, so "every day 09:00" is 24h
// apart). loc is the zone the rule will run in; the rule itself does not
// depend on it (Rule.After takes the zone).
//
// It returns the rule and the prompt: the rest of args, trimmed, which must
// not be empty.
func ParseEvery(args string, loc *time.Location, minInterval time.Duration) (Rule, string, error) {
	args = strings.TrimSpace(args)
	if args == "" {
		return Rule{}, "", newError(ErrSyntax, "missing the schedule and the prompt: write /every SPEC PROMPT, SPEC being an interval (30m, 2h), day 09:00, weekdays 09:00, a weekday (mon 09:00, mon,wed,fri 09:00) or a cron expression (0 9 * * 1-5)")
	}
	r, spec, rest, err := parseSpec(args, true)
	if err != nil {
		return Rule{}, "", err
	}
	if minInterval > 0 {
		if err := r.checkMinInterval(spec, minInterval); err != nil {
			return Rule{}, "", err
		}
	}
	prompt := strings.TrimRightFunc(rest, unicode.IsSpace)
	if prompt == "" {
		return Rule{}, "", newError(ErrNoPrompt, "missing the prompt after %q: write it after the schedule, as in /every day 09:00 summarise the news", spec)
	}
	return r, prompt, nil
}

// ParseRule parses String's output back: ParseRule(r.String()) == r for
// every rule ParseEvery returns. It does not apply a minimum interval (the
// rule was checked when it was made). It also reads the other spellings
// ParseEvery accepts after "every " ("every 90m", "every Monday 9:00").
func ParseRule(s string) (Rule, error) {
	s = strings.TrimSpace(s)
	word, rest := nextToken(s)
	var r Rule
	var err error
	switch word {
	case "every":
		if rest == "" {
			return Rule{}, newError(ErrSyntax, "can't read %q as a schedule: %s", s, everyForms)
		}
		r, _, rest, err = parseSpec(rest, false)
	case "cron":
		fields := strings.Fields(rest)
		if len(fields) != 5 {
			return Rule{}, newError(ErrSyntax, "can't read %q as a schedule: a cron expression has exactly five fields (minute hour day-of-month month day-of-week)", s)
		}
		r, err = parseCron(fields)
		rest = ""
	default:
		return Rule{}, newError(ErrSyntax, "can't read %q as a schedule: it should start with \"every\" or \"cron\"", s)
	}
	if err != nil {
		return Rule{}, err
	}
	if rest != "" {
		return Rule{}, newError(ErrSyntax, "can't read %q as a schedule: %q follows it", s, rest)
	}
	return r, nil
}

// parseSpec reads a SPEC at the start of s: the rule, the text it was read
// from (for messages) and the rest of s. Cron expressions are read only
// with allowCron (ParseRule reads them after "cron").
func parseSpec(s string, allowCron bool) (r Rule, spec, rest string, err error) {
	tok, rest := nextToken(s)
	lower := strings.ToLower(tok)

	if d, ok := parseDuration(tok); ok {
		if d <= 0 {
			return Rule{}, "", "", newError(ErrSyntax, "can't read %q as a schedule: an interval must be positive; %s", tok, everyForms)
		}
		return Rule{kind: KindInterval, interval: d}, tok, rest, nil
	}

	if days, ok := parseDays(lower); ok {
		clock, rest2 := nextToken(rest)
		h, m, ok := parseClock(clock)
		if !ok {
			if clock == "" {
				return Rule{}, "", "", newError(ErrSyntax, "%q needs a time of day, as in %s 09:00: %s", tok, lower, everyForms)
			}
			return Rule{}, "", "", newError(ErrSyntax, "can't read %q as a time of day after %q: write HH:MM, as in %s 09:00", clock, tok, lower)
		}
		return calendarRule(days, h, m), tok + " " + clock, rest2, nil
	}

	if allowCron {
		if lower == "cron" {
			return cronSpec(rest, "")
		}
		if second, _ := nextToken(rest); cronChars(tok, false) && cronChars(second, false) {
			return cronSpec(s, "; or "+everyForms)
		}
	}

	hint := ""
	if allDigits(tok) {
		hint = " (an interval needs a unit, as in " + tok + "m)"
	}
	return Rule{}, "", "", newError(ErrSyntax, "can't read %q as a schedule%s: %s", tok, hint, everyForms)
}

// cronSpec reads the five-field cron expression at the start of s: the
// rule, the expression and the rest of s. more ends the message when there
// are fewer than five fields.
func cronSpec(s, more string) (Rule, string, string, error) {
	var fields []string
	rest := s
	for len(fields) < 5 && rest != "" {
		var tok string
		tok, rest = nextToken(rest)
		fields = append(fields, tok)
	}
	if len(fields) < 5 {
		return Rule{}, "", "", newError(ErrSyntax, "can't read %q as a cron expression: it has exactly five fields (minute hour day-of-month month day-of-week), as in 0 9 * * 1-5%s", strings.Join(fields, " "), more)
	}
	// A sixth word that reads as a day-of-week field makes this a
	// six-field (seconds first) expression, which is not supported.
	if sixth, _ := nextToken(rest); cronChars(sixth, true) {
		if _, err := cron.NewParser(cron.Dow).Parse(sixth); err == nil {
			return Rule{}, "", "", newError(ErrSyntax, "can't read %q as a cron expression: it has exactly five fields (minute hour day-of-month month day-of-week; no seconds), as in 0 9 * * 1-5; if %q begins the prompt, reword it", strings.Join(append(fields, sixth), " "), sixth)
		}
	}
	r, err := parseCron(fields)
	if err != nil {
		return Rule{}, "", "", err
	}
	return r, strings.Join(fields, " "), rest, nil
}

// cronChars reports whether tok is made of what a cron field may hold:
// digits, * ? , / - and, with names (month and day-of-week fields),
// ASCII letters.
func cronChars(tok string, names bool) bool {
	if tok == "" {
		return false
	}
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case c >= '0' && c <= '9', c == '*', c == '?', c == ',', c == '/', c == '-':
		case names && (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'):
		default:
			return false
		}
	}
	return true
}

// parseDays reads a day set: "day", "weekdays" (or "weekday"), or a comma
// list of day names. lower is already lower-case.
func parseDays(lower string) (uint8, bool) {
	switch lower {
	case "day":
		return allDays, true
	case "weekdays", "weekday":
		return weekdays, true
	}
	var days uint8
	for name := range strings.SplitSeq(lower, ",") {
		d, ok := dayNames[name]
		if !ok {
			return 0, false
		}
		days |= 1 << d
	}
	return days, true
}

// calendarRule makes the rule firing at h:m on days, as the cron
// expression "m h * * days".
func calendarRule(days uint8, h, m int) Rule {
	var dow []string
	for d := time.Sunday; d <= time.Saturday; d++ {
		if days&(1<<d) != 0 {
			dow = append(dow, fmt.Sprint(int(d)))
		}
	}
	spec, err := cronParser.Parse(fmt.Sprintf("%d %d * * %s", m, h, strings.Join(dow, ",")))
	if err != nil {
		panic("schedule: calendar rule: " + err.Error()) // cannot happen: the fields are in range
	}
	return Rule{kind: KindCalendar, days: days, hour: uint8(h), minute: uint8(m), spec: *spec.(*cron.SpecSchedule)}
}

// cronParser is robfig/cron's standard parser (minute hour dom month dow)
// without descriptors such as @daily.
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow)

// cronFields names the five fields and their ranges, for messages.
var cronFields = [5]struct{ name, span string }{
	{"minute", "0-59"},
	{"hour", "0-23"},
	{"day of month", "1-31"},
	{"month", "1-12 or jan-dec"},
	{"day of week", "0-6 or sun-sat"},
}

// parseCron reads a five-field cron expression.
func parseCron(fields []string) (Rule, error) {
	canon := make([]string, 5)
	for i, f := range fields {
		// Only ASCII letters in the name fields, so lower-casing keeps
		// the meaning (robfig reads names case-insensitively) and the
		// parser never sees a "TZ=" prefix or an "@" descriptor.
		if !cronChars(f, i >= 3) {
			return Rule{}, cronFieldError(fields, i)
		}
		canon[i] = strings.ToLower(f)
	}
	expr := strings.Join(canon, " ")
	sched, err := cronParser.Parse(expr)
	if err != nil {
		// Find the field at fault: each alone, the others "*".
		for i := range canon {
			probe := []string{"*", "*", "*", "*", "*"}
			probe[i] = canon[i]
			if _, err := cronParser.Parse(strings.Join(probe, " ")); err != nil {
				return Rule{}, cronFieldError(fields, i)
			}
		}
		return Rule{}, newError(ErrSyntax, "can't read %q as a cron expression: %v", strings.Join(fields, " "), err)
	}
	r := Rule{kind: KindCron, expr: expr, spec: *sched.(*cron.SpecSchedule)}
	if _, ok := minGap(&r.spec); !ok {
		return Rule{}, newError(ErrNeverFires, "cron %q never fires: no date matches it", expr)
	}
	return r, nil
}

func cronFieldError(fields []string, i int) *Error {
	return newError(ErrSyntax, "can't read %q as a cron expression: the %s field %q is not valid (%s); write minute hour day-of-month month day-of-week, as in 0 9 * * 1-5",
		strings.Join(fields, " "), cronFields[i].name, fields[i], cronFields[i].span)
}

// checkMinInterval refuses a rule that can fire sooner than min after its
// previous firing.
func (r Rule) checkMinInterval(spec string, min time.Duration) error {
	if r.kind == KindInterval {
		if r.interval < min {
			return newError(ErrTooOften, "every %s is more often than schedules.min_interval (%s)", FormatDuration(r.interval), FormatDuration(min))
		}
		return nil
	}
	gap, _ := minGap(&r.spec)
	if gap < min {
		return newError(ErrTooOften, "%s can fire %s apart, more often than schedules.min_interval (%s)", r.String(), FormatDuration(gap), FormatDuration(min))
	}
	return nil
}

// starBit is robfig/cron's mark of a field written "*" or "?".
const starBit = 1 << 63

// minGap is the shortest wall-clock gap between two consecutive firings of
// s (seconds field 0), or false when s never fires. The firings are every
// matching time of day on every matching date, so the gap is the least of
// the gap between two times of the same day and the gap from the last time
// of one matching date to the first of the next. Matching dates are
// enumerated over 2000-2007 (two leap days, every weekday-date alignment
// that matters for consecutive dates).
func minGap(s *cron.SpecSchedule) (time.Duration, bool) {
	var times []int // minutes of the day, ascending
	for h := 0; h < 24; h++ {
		if s.Hour&(1<<h) == 0 {
			continue
		}
		for m := 0; m < 60; m++ {
			if s.Minute&(1<<m) != 0 {
				times = append(times, h*60+m)
			}
		}
	}
	if len(times) == 0 {
		return 0, false
	}
	gap := -1
	for i := 1; i < len(times); i++ {
		if g := times[i] - times[i-1]; gap < 0 || g < gap {
			gap = g
		}
	}

	start := time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)
	end := time.Date(2008, time.January, 1, 0, 0, 0, 0, time.UTC)
	last, minDays, fires := -1, -1, false
	day := 0
	for t := start; t.Before(end); t, day = t.AddDate(0, 0, 1), day+1 {
		if s.Month&(1<<uint(t.Month())) == 0 || !dayMatches(s, t) {
			continue
		}
		fires = true
		if last >= 0 {
			if d := day - last; minDays < 0 || d < minDays {
				minDays = d
			}
		}
		last = day
	}
	if !fires {
		return 0, false
	}
	if minDays > 0 {
		if g := minDays*24*60 - (times[len(times)-1] - times[0]); gap < 0 || g < gap {
			gap = g
		}
	}
	if gap < 0 { // one time on one date in eight years: cannot be
		gap = 0
	}
	return time.Duration(gap) * time.Minute, true
}

// dayMatches is robfig/cron's rule for a date: day of month and day of
// week must both match when either field is "*", else either may.
func dayMatches(s *cron.SpecSchedule, t time.Time) bool {
	domMatch := s.Dom&(1<<uint(t.Day())) != 0
	dowMatch := s.Dow&(1<<uint(t.Weekday())) != 0
	if s.Dom&starBit != 0 || s.Dow&starBit != 0 {
		return domMatch && dowMatch
	}
	return domMatch || dowMatch
}

// After is the first due time strictly after now (in loc; nil is
// time.Local).
//
// For an interval rule it is on the grid prev + k*interval, k >= 1, where
// prev is the previous due time (the creation time for the first): a late
// firing does not make the schedule drift, and a rule long overdue comes
// back to the first grid point after now.
//
// For calendar and cron rules it is the next matching minute after the
// later of prev and now, in loc, as robfig/cron computes it with times in
// loc: on the day DST starts a time in the skipped hour does not fire; on
// the day it ends, a time in the repeated hour fires once, at its first
// occurrence (robfig/cron would fire it again an hour later; After skips a
// candidate that shows the same wall-clock minute as prev).
//
// The zero Rule, or a rule that cannot fire, returns the zero time.
func (r Rule) After(prev, now time.Time, loc *time.Location) time.Time {
	loc = orLocal(loc)
	switch r.kind {
	case KindInterval:
		return intervalAfter(prev, now, r.interval).In(loc)
	case KindCalendar, KindCron:
		from := now
		if prev.After(from) {
			from = prev
		}
		spec := r.spec
		next := spec.Next(from.In(loc))
		if !next.IsZero() && !prev.IsZero() && sameWallMinute(next, prev.In(loc)) {
			next = spec.Next(next)
		}
		return next
	}
	return time.Time{}
}

// intervalAfter is the first prev + k*interval (k >= 1) after now.
func intervalAfter(prev, now time.Time, interval time.Duration) time.Time {
	if interval <= 0 {
		return time.Time{}
	}
	if prev.IsZero() {
		prev = now
	}
	first := prev.Add(interval)
	if first.After(now) {
		return first
	}
	elapsed := now.Sub(prev) // > 0 here; saturates after ~292 years
	k := elapsed / interval  // prev + k*interval <= now < prev + (k+1)*interval
	next := prev.Add(k * interval).Add(interval)
	for !next.After(now) { // only when elapsed saturated
		next = next.Add(interval)
		if d := now.Sub(next); d > interval {
			next = next.Add(d / interval * interval)
		}
	}
	return next
}

// sameWallMinute reports whether a and b (in the same zone) show the same
// date, hour and minute.
func sameWallMinute(a, b time.Time) bool {
	ay, am, ad := a.Date()
	by, bm, bd := b.Date()
	return ay == by && am == bm && ad == bd && a.Hour() == b.Hour() && a.Minute() == b.Minute()
}
