package config

import (
	"testing"
	"time"
)

func TestRotateNext(t *testing.T) {
	loc := time.FixedZone("X", 2*3600)
	start := time.Date(2026, 3, 10, 5, 0, 0, 0, loc)
	tests := []struct {
		name, value string
		want        time.Time
	}{
		{"off", "off", time.Time{}},
		{"empty", "", time.Time{}},
		{"every", "24h", start.Add(24 * time.Hour)},
		{"daily later today", "daily@06:15", time.Date(2026, 3, 10, 6, 15, 0, 0, loc)},
		{"daily tomorrow", "daily@04", time.Date(2026, 3, 11, 4, 0, 0, 0, loc)},
		{"daily same instant is tomorrow", "daily@05:00", time.Date(2026, 3, 11, 5, 0, 0, 0, loc)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseRotate(tc.value)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Next(start); !got.Equal(tc.want) {
				t.Errorf("Next = %v, want %v", got, tc.want)
			}
			if r.Off() != tc.want.IsZero() {
				t.Errorf("Off = %v", r.Off())
			}
		})
	}
}

func TestRotateString(t *testing.T) {
	for in, want := range map[string]string{"off": "off", "daily@4": "daily@04:00", "daily@23:59": "daily@23:59", "90m": "1h30m0s"} {
		r, err := ParseRotate(in)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if r.String() != want {
			t.Errorf("ParseRotate(%q).String() = %q, want %q", in, r.String(), want)
		}
	}
	for _, bad := range []string{"daily@", "daily@1:5", "daily@12:60", "daily@-1", "daily@x", "5"} {
		if _, err := ParseRotate(bad); err == nil {
			t.Errorf("ParseRotate(%q) accepted", bad)
		}
	}
}
