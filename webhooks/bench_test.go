package webhooks

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/gatewayd/gatewayd/config"
)

// BenchmarkWebhookAccept is the listener's own work per accepted delivery
// (a 1 KB GitHub-like body): the size check, the HMAC, JSON decoding and
// the template, up to the gateway's Trigger (a fake here; the store's
// commit is measured by the store's benchmarks).
func BenchmarkWebhookAccept(b *testing.B) {
	tmpl, err := config.ParseHookTemplate("github", `{{.action}} on {{.repository.full_name}}: PR #{{.pull_request.number}} {{.pull_request.title}}`)
	if err != nil {
		b.Fatal(err)
	}
	srv, err := New(Config{Listen: "127.0.0.1:0", Hooks: []Hook{{Name: "github", Secret: secret, Lane: "v1:api:hooks", Template: tmpl}},
		Triggerer: &fakeGateway{}, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	h := srv.Handler()
	body := `{"action":"opened","repository":{"full_name":"gatewayd/gatewayd"},"pull_request":{"number":42,"title":"Plan mode",` +
		`"body":"` + strings.Repeat("x", 900) + `"}}`
	sig := sign(body)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		req := httptest.NewRequest(http.MethodPost, "/hooks/github", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Hub-Signature-256", sig)
		req.Header.Set("X-GitHub-Delivery", "d"+strconv.Itoa(i))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusAccepted {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
}
