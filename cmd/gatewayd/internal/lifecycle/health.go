package lifecycle

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Health is the daemon's readiness as served on /healthz: not ready until
// start-up finished, then ready while the probe passes, not ready again
// once shutdown begins.
//
// A check never waits long for the probe: under load a store round trip or
// a codex ping can take seconds, and a probe that waits for them makes a
// working daemon look dead to systemd, a load balancer or the cluster. So
// the probe runs on its own goroutine, one at a time: a check waits for it
// up to answerWait, else answers with the last finished probe. A probe
// that has run past its timeout is a failure, whether or not it returns.
type Health struct {
	probe   Probe
	timeout time.Duration // a probe running longer has failed

	mu      sync.Mutex
	ready   bool
	reason  string
	cluster func() any // SetCluster: this node's leases, shown in the body

	pmu     sync.Mutex
	last    error     // the last finished probe's result
	lastAt  time.Time // when it finished; zero: none has
	running chan struct{}
	since   time.Time // when the running probe started
}

// How long a check waits for the probe it starts, and how long a passed
// probe is taken as current without another.
const (
	answerWait        = 50 * time.Millisecond
	passFresh         = time.Second
	DefaultProbeLimit = 10 * time.Second
)

// SetCluster adds what fn returns to every /healthz body as "cluster" (a
// cluster node's leases). Call it before serving.
func (h *Health) SetCluster(fn func() any) {
	h.mu.Lock()
	h.cluster = fn
	h.mu.Unlock()
}

// NewHealth returns a Health that is not ready ("starting"). timeout is
// how long a probe may run before it counts as failed (default
// DefaultProbeLimit): longer than a busy store or codex takes to answer.
func NewHealth(probe Probe, timeout time.Duration) *Health {
	if timeout <= 0 {
		timeout = DefaultProbeLimit
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

// Check returns nil when ready and the probe passes. It waits for a probe
// at most answerWait, unless none has finished yet (then until ctx ends).
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
	h.pmu.Lock()
	if h.last == nil && !h.lastAt.IsZero() && time.Since(h.lastAt) < passFresh {
		h.pmu.Unlock()
		return nil
	}
	done := h.startProbe()
	first := h.lastAt.IsZero()
	h.pmu.Unlock()
	var wait <-chan time.Time
	if !first {
		t := time.NewTimer(answerWait)
		defer t.Stop()
		wait = t.C
	}
	select {
	case <-done:
	case <-wait:
	case <-ctx.Done():
		if first {
			return fmt.Errorf("health probe: %w", ctx.Err())
		}
	}
	h.pmu.Lock()
	defer h.pmu.Unlock()
	if h.running != nil {
		if ran := time.Since(h.since); ran > h.timeout {
			return fmt.Errorf("health probe unanswered for %s", ran.Round(time.Second))
		}
	}
	return h.last
}

// startProbe starts the probe unless one is running, and returns the
// channel closed when the running one ends. h.pmu is held.
func (h *Health) startProbe() <-chan struct{} {
	if h.running != nil {
		return h.running
	}
	done := make(chan struct{})
	h.running, h.since = done, time.Now()
	go func() {
		defer close(done)
		ctx, cancel := context.WithTimeout(context.Background(), h.timeout)
		defer cancel()
		err := h.probe(ctx)
		h.pmu.Lock()
		h.last, h.lastAt, h.running = err, time.Now(), nil
		h.pmu.Unlock()
	}()
	return done
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
