package client

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// A 503 with Retry-After (the daemon's connections all in use) is sent
// again, body and all, after the wait; other answers, and a 503 once the
// retries are spent, are returned as they are.
func TestSendRetriesABusyDaemon(t *testing.T) {
	var mu sync.Mutex
	var bodies []string
	busy := 1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		bodies = append(bodies, string(b))
		if busy > 0 {
			busy--
			w.Header().Set("Retry-After", "1")
			http.Error(w, "too many connections", http.StatusServiceUnavailable)
			return
		}
		io.WriteString(w, "taken")
	}))
	defer srv.Close()
	api := &API{Base: srv.URL, HTTP: srv.Client(), RetryBusy: 2}
	req, err := api.Request(context.Background(), http.MethodPost, "/api/lanes/x/messages", map[string]string{"text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := api.Send(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(got) != "taken" || len(bodies) != 2 || bodies[1] != bodies[0] || bodies[0] != `{"text":"hi"}` {
		t.Fatalf("answer %d %q after requests with bodies %q; want the second taken with the same body", resp.StatusCode, got, bodies)
	}

	mu.Lock()
	busy = 5
	mu.Unlock()
	api.RetryBusy = 0
	req, _ = api.Request(context.Background(), http.MethodGet, "/healthz", nil)
	if resp, err := api.Send(req); err != nil || resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("without retries: %v, %v; want the 503 returned", resp, err)
	}
}
