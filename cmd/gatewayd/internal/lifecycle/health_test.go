package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"net/http/httptest"
	"testing"
)

func TestHealthz(t *testing.T) {
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
		{"probe fails", func() { probeErr = errors.New("codex: ping: timeout") }, 503, "unavailable", "codex: ping: timeout"},
		{"recovered", func() { probeErr = nil }, 200, "ok", ""},
		{"stopping", func() { h.SetNotReady("shutting down") }, 503, "unavailable", "shutting down"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
			if rec.Code != tc.wantCode {
				t.Errorf("code = %d, want %d", rec.Code, tc.wantCode)
			}
			var body healthBody
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil {
				t.Fatalf("body %q: %v", rec.Body.String(), err)
			}
			if body.Status != tc.wantStatus || body.Reason != tc.wantReason {
				t.Errorf("body = %+v, want status %q reason %q", body, tc.wantStatus, tc.wantReason)
			}
			if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q", ct)
			}
		})
	}
}
