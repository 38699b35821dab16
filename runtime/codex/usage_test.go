package codex

import (
	"encoding/json"
	"testing"
	"time"
)

func TestErrorKind(t *testing.T) {
	tests := []struct {
		name, raw, want string
	}{
		{name: "string form", raw: `"usageLimitExceeded"`, want: InfoUsageLimitExceeded},
		{name: "object form", raw: `{"httpConnectionFailed":{"httpStatusCode":429}}`, want: "httpConnectionFailed"},
		{name: "null", raw: `null`, want: ""},
		{name: "absent", raw: ``, want: ""},
		{name: "garbage", raw: `[1,2]`, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := errorKind(json.RawMessage(tt.raw)); got != tt.want {
				t.Errorf("errorKind(%s) = %q, want %q", tt.raw, got, tt.want)
			}
		})
	}
	var nilErr *TurnError
	if nilErr.IsUsageLimit() {
		t.Error("a nil TurnError reports a usage limit")
	}
}

// TestRateLimitsSparseMerge: a rolling update without a window keeps the
// window seen before; one with it replaces it.
func TestRateLimitsSparseMerge(t *testing.T) {
	var book rateLimitBook
	decode := func(s string) *wireRateLimits {
		var w wireRateLimits
		if err := json.Unmarshal([]byte(s), &w); err != nil {
			t.Fatal(err)
		}
		return &w
	}
	book.merge(decode(`{"limitId":"codex","primary":{"usedPercent":40,"windowDurationMins":300,"resetsAt":1000},"secondary":{"usedPercent":10,"resetsAt":5000}}`))
	got := book.merge(decode(`{"limitId":null,"primary":{"usedPercent":100,"windowDurationMins":300,"resetsAt":2000},"secondary":null}`))
	want := RateLimits{LimitID: "codex", Windows: []RateLimitWindow{
		{Name: "primary", UsedPercent: 100, WindowMinutes: 300, ResetsAt: time.Unix(2000, 0)},
		{Name: "secondary", UsedPercent: 10, ResetsAt: time.Unix(5000, 0)},
	}}
	if len(got.Windows) != 2 || got.LimitID != want.LimitID || got.Windows[0] != want.Windows[0] || got.Windows[1] != want.Windows[1] {
		t.Fatalf("merged = %+v, want %+v", got, want)
	}
	if until, ok := got.ReachedUntil(time.Unix(1500, 0)); !ok || !until.Equal(time.Unix(2000, 0)) {
		t.Errorf("ReachedUntil(1500) = %v, %v; want 2000, true", until, ok)
	}
	if _, ok := got.ReachedUntil(time.Unix(2000, 0)); ok {
		t.Error("a window whose reset has passed still counts as reached")
	}
}
