package schedule

import (
	"strings"
	"time"
	"unicode"
)

// atForms lists what /at's WHEN may be, for error messages.
const atForms = "use a duration (10m, 2h), a time (15:30) or a date and time (2026-12-24 09:00)"

const dateLayout = "2006-01-02"

// ParseAt parses "/at"'s arguments: WHEN then the prompt.
//
// WHEN is one of
//   - a positive Go duration ("10m", "2h", "1h30m"): due that long after now;
//   - a time of day "15:30" (or "9:05"): today in loc, or tomorrow when that
//     is not after now;
//   - a date and time "2026-12-24 09:00" (also "2026-12-24T09:00") in loc,
//     which must be after now.
//
// It returns the due time (in loc) and the prompt: the rest of args,
// trimmed, which must not be empty. A nil loc is time.Local.
func ParseAt(args string, now time.Time, loc *time.Location) (due time.Time, prompt string, err error) {
	loc = orLocal(loc)
	args = strings.TrimSpace(args)
	if args == "" {
		return time.Time{}, "", newError(ErrSyntax, "missing the time and the prompt: write /at WHEN PROMPT, WHEN being a duration (10m, 2h), a time (15:30) or a date and time (2026-12-24 09:00)")
	}
	tok, rest := nextToken(args)
	when := tok

	switch d, isDur := parseDuration(tok); {
	case isDur:
		if d <= 0 {
			return time.Time{}, "", newError(ErrSyntax, "%q is not in the future: %s", tok, atForms)
		}
		due = now.Add(d).In(loc)

	default:
		if h, m, ok := parseClock(tok); ok {
			local := now.In(loc)
			y, mo, day := local.Date()
			due = time.Date(y, mo, day, h, m, 0, 0, loc)
			if !due.After(now) {
				due = time.Date(y, mo, day+1, h, m, 0, 0, loc)
			}
			break
		}
		dateTok, clockTok, joined := strings.Cut(tok, "T")
		if !joined {
			dateTok = tok
		}
		date, derr := time.Parse(dateLayout, dateTok)
		if derr != nil {
			return time.Time{}, "", newError(ErrSyntax, "can't read %q as a time: %s", tok, atForms)
		}
		if !joined {
			clockTok, rest = nextToken(rest)
			when = tok + " " + clockTok
		}
		h, m, ok := parseClock(clockTok)
		if !ok {
			if clockTok == "" {
				return time.Time{}, "", newError(ErrSyntax, "%q needs a time of day too, as in 2026-12-24 09:00: %s", tok, atForms)
			}
			return time.Time{}, "", newError(ErrSyntax, "can't read %q as a date and time: %s", when, atForms)
		}
		due = time.Date(date.Year(), date.Month(), date.Day(), h, m, 0, 0, loc)
		if !due.After(now) {
			return time.Time{}, "", newError(ErrPast, "%s (%s) is in the past: give a date and time still to come", due.Format("2006-01-02 15:04"), loc)
		}
	}

	prompt = strings.TrimRightFunc(rest, unicode.IsSpace)
	if prompt == "" {
		return time.Time{}, "", newError(ErrNoPrompt, "missing the prompt after %q: write it after the time, as in /at 10m check the build", when)
	}
	return due, prompt, nil
}
