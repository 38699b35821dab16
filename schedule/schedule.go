// Package schedule reads the arguments of the chat commands that schedule
// prompts in a lane and computes when they are due:
//
//	/at WHEN PROMPT      one firing: ParseAt
//	/every SPEC PROMPT   a recurring Rule: ParseEvery, Rule.String, ParseRule, Rule.After
//
// Everything here is a pure function of its arguments: no I/O, and the
// clock is always passed in. Parse errors are *Error values whose message
// says what was wrong and lists the accepted forms on one short line, ready
// to be shown to the user as is.
package schedule

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"

	// Binaries may run where the system has no zoneinfo (scratch or
	// distroless images): embed it so LoadLocation always works.
	_ "time/tzdata"
)

// The sentinels a parse *Error wraps (errors.Is), by what went wrong.
var (
	// ErrSyntax: the time or the schedule could not be read.
	ErrSyntax = errors.New("schedule: syntax error")
	// ErrNoPrompt: nothing follows the time or the schedule.
	ErrNoPrompt = errors.New("schedule: missing prompt")
	// ErrPast: /at was given a date and time that has already passed.
	ErrPast = errors.New("schedule: time in the past")
	// ErrTooOften: the schedule fires more often than the minimum interval.
	ErrTooOften = errors.New("schedule: more often than the minimum interval")
	// ErrNeverFires: a cron expression that matches no date ("0 0 30 2 *").
	ErrNeverFires = errors.New("schedule: never fires")
)

// Error is a parse error. Its message is meant for the user who typed the
// command: what was wrong and, for unreadable input, the accepted forms.
type Error struct {
	Kind error  // one of the sentinels above
	Msg  string // the whole message
}

func (e *Error) Error() string { return e.Msg }

// Unwrap returns the sentinel, so errors.Is(err, ErrSyntax) and the like work.
func (e *Error) Unwrap() error { return e.Kind }

func newError(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}

// LoadLocation returns the time zone with this IANA name; "" and "Local"
// are the machine's zone (time.Local). The zone database is embedded, so
// this works where the system has none.
func LoadLocation(name string) (*time.Location, error) {
	if name == "" || name == "Local" {
		return time.Local, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("unknown time zone %q (use an IANA name such as Europe/Berlin)", name)
	}
	return loc, nil
}

// orLocal treats a nil zone as the machine's, as LoadLocation("") does.
func orLocal(loc *time.Location) *time.Location {
	if loc == nil {
		return time.Local
	}
	return loc
}

// nextToken splits s after its first whitespace-separated word: the word
// and the rest (leading whitespace removed). s must not start with
// whitespace.
func nextToken(s string) (tok, rest string) {
	i := strings.IndexFunc(s, unicode.IsSpace)
	if i < 0 {
		return s, ""
	}
	return s[:i], strings.TrimLeftFunc(s[i:], unicode.IsSpace)
}

// parseClock reads a time of day "15:30" or "9:05" (hour 0-23, two-digit
// minute).
func parseClock(s string) (hour, minute int, ok bool) {
	h, m, found := strings.Cut(s, ":")
	if !found || len(h) < 1 || len(h) > 2 || len(m) != 2 || !allDigits(h) || !allDigits(m) {
		return 0, 0, false
	}
	hour, _ = strconv.Atoi(h)
	minute, _ = strconv.Atoi(m)
	if hour > 23 || minute > 59 {
		return 0, 0, false
	}
	return hour, minute, true
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// parseDuration reads a Go duration that carries a unit ("10m", "1h30m",
// "1.5h"); a bare number ("0", "30") is refused, so a cron expression's
// first field is never taken for a duration.
func parseDuration(s string) (time.Duration, bool) {
	if allDigits(strings.TrimLeft(s, "+-")) {
		return 0, false
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// FormatDuration writes d compactly, as users type it: "30m", "2h",
// "1h30m", "45s", "1h0.5s"; time.ParseDuration reads it back exactly.
func FormatDuration(d time.Duration) string {
	if d == 0 {
		return "0s"
	}
	var b strings.Builder
	if d < 0 {
		b.WriteByte('-')
		if d == -d { // math.MinInt64
			return d.String()
		}
		d = -d
	}
	if h := d / time.Hour; h > 0 {
		b.WriteString(strconv.FormatInt(int64(h), 10))
		b.WriteByte('h')
		d -= h * time.Hour
	}
	if m := d / time.Minute; m > 0 {
		b.WriteString(strconv.FormatInt(int64(m), 10))
		b.WriteByte('m')
		d -= m * time.Minute
	}
	if d > 0 {
		b.WriteString(d.String()) // "30s", "0.5s", "500ms"
	}
	return b.String()
}
