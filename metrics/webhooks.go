package metrics

import "github.com/prometheus/client_golang/prometheus"

// newWebhookDeliveries is gatewayd_webhook_deliveries_total: what became
// of each POST to the webhook listener.
func newWebhookDeliveries(reg prometheus.Registerer) *prometheus.CounterVec {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "webhook_deliveries_total",
		Help: "Webhook deliveries by hook and outcome (accepted, duplicate, ping; refused: signature, stale, unknown_hook, " +
			"replay, rate_limited, too_large, bad_body, template, lane, shutting_down, error).",
	}, []string{"hook", "outcome"})
	reg.MustRegister(c)
	return c
}

// WebhookDelivery counts one webhook delivery. hook is a configured hook's
// name ("" for a name no hook has) and outcome one of the webhooks
// package's, so the labels stay bounded. Implements webhooks.Observer.
func (m *Metrics) WebhookDelivery(hook, outcome string) {
	m.webhooks.WithLabelValues(hook, outcome).Inc()
}
