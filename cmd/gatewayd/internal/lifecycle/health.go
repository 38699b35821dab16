package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"
)

// Health is the daemon's readiness as served on /healthz: not ready until
// start-up finished, then ready while the probe passes, not ready again
// once shutdown begins.
type Health struct {
	probe   Probe
	timeout time.Duration

	mu      sync.Mutex
	ready   bool
	reason  string
	cluster func() any // SetCluster: this node's leases, shown in the body
}

// SetCluster adds what fn returns to every /healthz body as "cluster" (a
// cluster node's leases). Call it before serving.
func (h *Health) SetCluster(fn func() any) {
	h.mu.Lock()
	h.cluster = fn
	h.mu.Unlock()
}

// NewHealth returns a Health that is not ready ("starting").
func NewHealth(probe Probe, timeout time.Duration) *Health {
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	return &Health{probe: probe, timeout: timeout, reason: "starting"}
}

// SetReady marks start-up as finished.
func (h *Health) SetReady() {
	h.mu.Lock()
	h.ready, h.reason = true, ""
	h.mu.Unlock()
}

// SetNotReady marks the daemon unavailable with a reason (e.g. "shutting down").
func (h *Health) SetNotReady(reason string) {
	h.mu.Lock()
	h.ready, h.reason = false, reason
	h.mu.Unlock()
}

// Check returns nil when ready and the probe passes.
func (h *Health) Check(ctx context.Context) error {
	h.mu.Lock()
	ready, reason := h.ready, h.reason
	h.mu.Unlock()
	if !ready {
		return errors.New(reason)
	}
	if h.probe == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, h.timeout)
	defer cancel()
	return h.probe(ctx)
}

type healthBody struct {
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Cluster any    `json:"cluster,omitempty"`
}

// ServeHTTP answers 200 {"status":"ok"} or 503 {"status":"unavailable","reason":...}.
func (h *Health) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	body, code := healthBody{Status: "ok"}, http.StatusOK
	if err := h.Check(r.Context()); err != nil {
		body, code = healthBody{Status: "unavailable", Reason: err.Error()}, http.StatusServiceUnavailable
	}
	h.mu.Lock()
	if h.cluster != nil {
		body.Cluster = h.cluster()
	}
	h.mu.Unlock()
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(body) // the client may be gone; nothing to do then
}
