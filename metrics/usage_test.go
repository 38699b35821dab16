package metrics

import (
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestUsageMetrics(t *testing.T) {
	m := New()
	m.Tokens("telegram", "input", 1000)
	m.Tokens("telegram", "input", 500)
	m.Tokens("discord", "output", 70)
	m.RateLimitUsed("primary", 40)
	m.RateLimitUsed("primary", 100) // a gauge: the latest value wins
	m.RateLimitUsed("secondary", 12)

	if got := testutil.ToFloat64(m.usage.tokens.WithLabelValues("telegram", "input")); got != 1500 {
		t.Errorf("telegram input tokens = %v, want 1500", got)
	}
	if got := testutil.ToFloat64(m.usage.tokens.WithLabelValues("discord", "output")); got != 70 {
		t.Errorf("discord output tokens = %v, want 70", got)
	}
	if got := testutil.ToFloat64(m.usage.rateLimit.WithLabelValues("primary")); got != 100 {
		t.Errorf("primary window used = %v, want 100", got)
	}
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	body, _ := io.ReadAll(rec.Body)
	for _, want := range []string{
		`gatewayd_codex_tokens_total{kind="input",platform="telegram"} 1500`,
		`gatewayd_codex_rate_limit_used_percent{window="secondary"} 12`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}
