package metrics

import "github.com/prometheus/client_golang/prometheus"

// newScheduleFirings is gatewayd_schedule_firings_total: schedules fired
// (an inbox row written), over all lanes.
func newScheduleFirings(reg prometheus.Registerer) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: namespace, Name: "schedule_firings_total",
		Help: "Scheduled prompts fired (/at, /every), over all lanes.",
	})
	reg.MustRegister(c)
	return c
}

// ScheduleFired counts one firing (gateway.Observer).
func (m *Metrics) ScheduleFired() { m.firings.Inc() }
