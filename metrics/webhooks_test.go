package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// webhookObserver mirrors webhooks.Observer (the daemon asserts the real one).
type webhookObserver interface{ WebhookDelivery(hook, outcome string) }

var _ webhookObserver = (*Metrics)(nil)

func TestWebhookDeliveries(t *testing.T) {
	m := New()
	m.WebhookDelivery("github", "accepted")
	m.WebhookDelivery("github", "accepted")
	m.WebhookDelivery("github", "duplicate")
	m.WebhookDelivery("", "unknown_hook")
	want := `
# HELP gatewayd_webhook_deliveries_total Webhook deliveries by hook and outcome (accepted, duplicate, ping; refused: signature, stale, unknown_hook, replay, rate_limited, too_large, bad_body, template, lane, shutting_down, error).
# TYPE gatewayd_webhook_deliveries_total counter
gatewayd_webhook_deliveries_total{hook="",outcome="unknown_hook"} 1
gatewayd_webhook_deliveries_total{hook="github",outcome="accepted"} 2
gatewayd_webhook_deliveries_total{hook="github",outcome="duplicate"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "gatewayd_webhook_deliveries_total"); err != nil {
		t.Error(err)
	}
}
