package gateway_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/gatewayd/gatewayd/gateway"
)

// TestIntegrationAPISenderLimit: through the real API lane, app-server
// and SQLite, a sender's third message within a minute (limit 2) is
// answered 429 with Retry-After, is not stored, and never reaches the
// model; the two accepted ones each reach it once.
func TestIntegrationAPISenderLimit(t *testing.T) {
	w := newWorld(t)
	w.features.MaxPerMinute = 2
	in := w.start(t, gateway.Config{})
	for _, text := range []string{"first", "second"} {
		if out := in.ask(t, "limited", text); out.Reply != "ECHO: "+text {
			t.Fatalf("answer to %q = %q", text, out.Reply)
		}
	}
	status, retry, body := in.post(t, "limited", "third")
	if status != http.StatusTooManyRequests || retry == "" || retry == "0" {
		t.Fatalf("third message: status %d, Retry-After %q, body %s; want 429 with Retry-After", status, retry, body)
	}
	if !strings.Contains(body, "lanes.max_per_minute") {
		t.Errorf("429 body %s does not name lanes.max_per_minute", body)
	}
	asked := map[string]int{}
	for _, r := range w.model.Requests() {
		for _, text := range []string{"first", "second", "third"} {
			if r.LastUserText() == text {
				asked[text]++
			}
		}
	}
	if asked["first"] != 1 || asked["second"] != 1 || asked["third"] != 0 {
		t.Errorf("model asked %v, want first and second once, third never", asked)
	}
	rows, err := in.st.PendingInbound(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Text == "third" {
			t.Errorf("the refused message is stored: %+v", r)
		}
	}
}

// post sends a message as "tester" and returns the status, Retry-After
// and body, whatever the status.
func (in *instance) post(t *testing.T, lane, text string) (int, string, string) {
	t.Helper()
	raw, _ := json.Marshal(map[string]string{"text": text, "user": "tester"})
	resp, err := http.Post("http://"+in.api.Addr()+"/api/lanes/"+lane+"/messages", "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(resp.Body)
	return resp.StatusCode, resp.Header.Get("Retry-After"), b.String()
}
