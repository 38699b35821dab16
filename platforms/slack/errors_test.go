package slack

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/slack-go/slack"

	"github.com/gatewayd/gatewayd/gateway"
)

func TestMapError(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		permanent bool
		retry     time.Duration // 0: not a RetryAfterError
	}{
		{"rate limited", fmt.Errorf("wrapped: %w", &slack.RateLimitedError{RetryAfter: 3 * time.Second}), false, 3 * time.Second},
		{"rate limited, no wait", &slack.RateLimitedError{}, false, time.Second},
		{"channel gone", slack.SlackErrorResponse{Err: "channel_not_found"}, true, 0},
		{"internal error", slack.SlackErrorResponse{Err: "internal_error"}, false, 0},
		{"ratelimited code", slack.SlackErrorResponse{Err: "ratelimited"}, false, 0},
		{"service unavailable", slack.SlackErrorResponse{Err: "service_unavailable"}, false, 0},
		{"request timeout", slack.SlackErrorResponse{Err: "request_timeout"}, false, 0},
		{"fatal error", fmt.Errorf("wrapped: %w", slack.SlackErrorResponse{Err: "fatal_error"}), false, 0},
		{"access denied", slack.SlackErrorResponse{Err: "access_denied"}, true, 0},
		{"unknown code", slack.SlackErrorResponse{Err: "some_new_refusal"}, true, 0},
		{"400", slack.StatusCodeError{Code: 400}, true, 0},
		{"503", slack.StatusCodeError{Code: 503}, false, 0},
		{"network", errors.New("connection reset"), false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mapError("op", tt.err)
			if errors.Is(got, gateway.ErrPermanent) != tt.permanent {
				t.Fatalf("permanent = %v, want %v (%v)", !tt.permanent, tt.permanent, got)
			}
			var ra *gateway.RetryAfterError
			if errors.As(got, &ra) != (tt.retry != 0) || (ra != nil && ra.After != tt.retry) {
				t.Fatalf("retry after = %v, want %v", ra, tt.retry)
			}
			if code := slackCode(tt.err); code != "" && slackCode(got) != code {
				t.Fatalf("the Slack code is lost: %v", got)
			}
		})
	}
	if mapError("op", nil) != nil {
		t.Fatal("nil is an error")
	}
}

// fakeClock is a clock the test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

func TestLimiterBucketAndPause(t *testing.T) {
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	l := newLimiter(clock.now, 60) // one chat.update a second after a burst of 5
	for i := range 5 {
		if d := l.reserve("chat.update", ""); d > 0 {
			t.Fatalf("update %d of the burst waits %v", i, d)
		}
	}
	if d := l.reserve("chat.update", ""); d != time.Second {
		t.Fatalf("sixth update waits %v, want 1s", d)
	}
	l.refund("chat.update", "")
	clock.t = clock.t.Add(2 * time.Second)
	if d := l.reserve("chat.update", ""); d > 0 {
		t.Fatalf("after the refill the update waits %v", d)
	}
	// A 429 pauses that method only.
	l.observe("chat.postMessage", &gateway.RetryAfterError{After: 5 * time.Second})
	if d := l.reserve("chat.postMessage", ""); d != 5*time.Second {
		t.Fatalf("paused method waits %v", d)
	}
	if d := l.reserve("users.info", ""); d > 0 {
		t.Fatalf("another method waits %v", d)
	}
	// Posts: a burst of three per channel, then one a second; another
	// channel has its own.
	l = newLimiter(clock.now, 60)
	for i := range 3 {
		if d := l.reserve("chat.postMessage", "C9"); d > 0 {
			t.Fatalf("post %d of the burst waits %v", i, d)
		}
	}
	if d := l.reserve("chat.postMessage", "C9"); d != time.Second {
		t.Fatalf("fourth post waits %v", d)
	}
	if d := l.reserve("chat.postMessage", "C8"); d > 0 {
		t.Fatalf("another channel waits %v", d)
	}
	// A wait past the caller's deadline is a RetryAfterError at once.
	l.observe("chat.postMessage", &gateway.RetryAfterError{After: 5 * time.Second})
	ctx, cancel := context.WithDeadline(context.Background(), clock.t.Add(time.Second))
	defer cancel()
	var ra *gateway.RetryAfterError
	if err := l.wait(ctx, "chat.postMessage", ""); !errors.As(err, &ra) || ra.After != 5*time.Second {
		t.Fatalf("wait = %v", err)
	}
}

func TestTSMicros(t *testing.T) {
	n, err := tsMicros("1700000000.000100")
	if err != nil || n != 1700000000000100 || formatTS(n) != "1700000000.000100" {
		t.Fatalf("tsMicros = %d, %v", n, err)
	}
	for _, bad := range []string{"", "1700000000", "17.1", "x.000001", "-1.000001"} {
		if _, err := tsMicros(bad); err == nil {
			t.Errorf("tsMicros(%q) accepted", bad)
		}
	}
	if !tsLess("999999999.999999", "1000000000.000000") || tsLess("1700000000.000002", "1700000000.000001") {
		t.Fatal("tsLess")
	}
}
