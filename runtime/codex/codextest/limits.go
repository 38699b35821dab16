package codextest

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// UsageLimitWindowMinutes is the primary window UsageLimit reports (the
// ChatGPT plans' five-hour window).
const UsageLimitWindowMinutes = 300

// UsageLimit is the reply of a ChatGPT backend whose account used up its
// plan: HTTP 429 with error type usage_limit_reached and resets_at, plus
// the x-codex-primary-* headers saying the primary window is 100% used
// until resetsAt. codex 0.169.0 turns it into a failed turn with
// codexErrorInfo "usageLimitExceeded" (message "…try again at 3:04 PM.",
// not retried) and, from the headers, account/rateLimits/updated with
// primary {usedPercent:100, resetsAt} just before the error.
func UsageLimit(resetsAt time.Time) Reply {
	return Reply{
		HTTPStatus: http.StatusTooManyRequests,
		ErrorBody: fmt.Sprintf(`{"error":{"type":"usage_limit_reached","message":"The usage limit has been reached","plan_type":"pro","resets_at":%d}}`,
			resetsAt.Unix()),
		Headers: RateLimitHeaders(100, UsageLimitWindowMinutes, resetsAt),
	}
}

// RateLimitHeaders are the x-codex-primary-* response headers from which
// codex reports the account's primary rate-limit window.
func RateLimitHeaders(usedPercent float64, windowMinutes int, resetsAt time.Time) map[string]string {
	return map[string]string{
		"x-codex-primary-used-percent":   strconv.FormatFloat(usedPercent, 'f', -1, 64),
		"x-codex-primary-window-minutes": strconv.Itoa(windowMinutes),
		"x-codex-primary-reset-at":       strconv.FormatInt(resetsAt.Unix(), 10),
	}
}
