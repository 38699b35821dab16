package metrics

import "github.com/prometheus/client_golang/prometheus"

// usageMetrics are the token and rate-limit collectors.
type usageMetrics struct {
	tokens    *prometheus.CounterVec
	rateLimit *prometheus.GaugeVec
}

func newUsageMetrics(reg prometheus.Registerer) usageMetrics {
	u := usageMetrics{
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: namespace, Name: "codex_tokens_total",
			Help: "Tokens Codex turns spent, by platform and kind (input includes cached; output includes reasoning).",
		}, []string{"platform", "kind"}),
		rateLimit: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: namespace, Name: "codex_rate_limit_used_percent",
			Help: "Percent used of the Codex account's rate-limit window (primary, secondary), as codex last reported.",
		}, []string{"window"}),
	}
	reg.MustRegister(u.tokens, u.rateLimit)
	return u
}

// Tokens counts n tokens of kind (input, cached, output, reasoning) spent
// by a turn on platform. Part of the gateway's optional usage observer.
func (m *Metrics) Tokens(platform, kind string, n int64) {
	m.usage.tokens.WithLabelValues(platform, kind).Add(float64(n))
}

// RateLimitUsed records a rate-limit window's percent used; window is
// codex's name for it ("primary", "secondary"), so the labels stay bounded.
func (m *Metrics) RateLimitUsed(window string, percent float64) {
	m.usage.rateLimit.WithLabelValues(window).Set(percent)
}
