package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
)

func TestHealthz(t *testing.T) {
	synctest.Test(t, testHealthz)
}

func testHealthz(t *testing.T) {
	var probeErr error
	h := NewHealth(func(context.Context) error { return probeErr }, 0)
	tests := []struct {
		name       string
		setup      func()
		wantCode   int
		wantStatus string
		wantReason string
	}{
		{"starting", func() {}, 503, "unavailable", "starting"},
		{"ready", func() { h.SetReady() }, 200, "ok", ""},
		// A pass is current for passFresh: the change shows after it.
		{"probe fails", func() { probeErr = errors.New("codex: ping: timeout"); time.Sleep(passFresh) }, 503, "unavailable", "codex: ping: timeout"},
		{"recovered", func() { probeErr = nil }, 200, "ok", ""},
		{"stopping", func() { h.SetNotReady("shutting down") }, 503, "unavailable", "shutting down"},
	}
	for _, tc := range tests {
		func() { // no t.Run inside a synctest bubble: errors name the case
			tc.setup()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
			if rec.Code != tc.wantCode {
				t.Errorf("%s: code = %d, want %d", tc.name, rec.Code, tc.wantCode)
			}
			var body healthBody
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("%s: body %q: %v", tc.name, rec.Body.String(), err)
			}
			if body.Status != tc.wantStatus || body.Reason != tc.wantReason {
				t.Errorf("%s: body = %+v, want status %q reason %q", tc.name, body, tc.wantStatus, tc.wantReason)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("%s: Content-Type = %q", tc.name, ct)
			}
		}()
	}
}

// While a probe is slow (a store round trip behind a busy writer), a check
// answers within answerWait with the last probe's result, one probe runs
// however many checks come, and a probe past its timeout is a failure.
func TestHealthAnswersWhileTheProbeIsSlow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int32
		release := make(chan struct{})
		h := NewHealth(func(ctx context.Context) error {
			if calls.Add(1) == 1 {
				return nil
			}
			<-release
			return nil
		}, 0)
		h.SetReady()
		if err := h.Check(t.Context()); err != nil {
			t.Fatalf("first check: %v", err)
		}
		time.Sleep(passFresh)
		for range 3 {
			start := time.Now()
			if err := h.Check(t.Context()); err != nil {
				t.Fatalf("check while the probe is slow: %v, want the last pass", err)
			}
			if waited := time.Since(start); waited > answerWait {
				t.Fatalf("a check waited %v for a slow probe, want at most %v", waited, answerWait)
			}
		}
		if n := calls.Load(); n != 2 {
			t.Fatalf("probe ran %d times, want 2 (one at a time)", n)
		}
		time.Sleep(DefaultProbeLimit)
		if err := h.Check(t.Context()); err == nil || !strings.Contains(err.Error(), "unanswered") {
			t.Fatalf("check with a probe running past its limit: %v, want unanswered", err)
		}
		close(release)
		synctest.Wait()
		if err := h.Check(t.Context()); err != nil {
			t.Fatalf("check once the probe returned: %v", err)
		}
	})
}

// The first check after start-up waits for the first probe: there is no
// earlier answer to give.
func TestHealthFirstCheckWaitsForTheProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := NewHealth(func(ctx context.Context) error {
			time.Sleep(time.Second)
			return errors.New("store: locked")
		}, 0)
		h.SetReady()
		if err := h.Check(t.Context()); err == nil || err.Error() != "store: locked" {
			t.Fatalf("first check: %v, want the probe's error", err)
		}
	})
}
