// Package metrics exposes gatewayd's Prometheus metrics from its own
// registry (never the global one) and implements gateway.Observer, so the
// router reports events without knowing about Prometheus.
package metrics

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

const namespace = "gatewayd"

// Sources are callbacks read at scrape time for values other components
// own. Any may be nil (the metric then reads 0). They are bound after the
// components exist, because the gateway needs the Metrics (its Observer)
// before it can be asked for its stats.
type Sources struct {
	LiveLanes         func() int
	QueuedMessages    func() int
	RunningTurns      func() int
	StoreQueueDepth   func() int
	AppServerRestarts func() int64
	// Schedules is how many schedules are stored, over all lanes.
	Schedules func() int
}

// Metrics holds every collector. Safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	inbound        *prometheus.CounterVec
	duplicates     *prometheus.CounterVec
	outbound       *prometheus.CounterVec
	turns          *prometheus.CounterVec
	turnLatency    *prometheus.HistogramVec
	resumes        *prometheus.CounterVec
	platformErrors *prometheus.CounterVec
	storeCommit    prometheus.Histogram
	buildInfo      *prometheus.GaugeVec
	usage          usageMetrics // tokens and rate limits (usage.go)
	mu             sync.RWMutex
	sources        Sources

	webhooks *prometheus.CounterVec // webhook deliveries (webhooks.go)
	firings  prometheus.Counter     // schedule firings (schedules.go)
}

// New builds the metrics and registers them, with the Go runtime and
// process collectors, on a fresh registry.
func New() *Metrics {
	m := &Metrics{reg: prometheus.NewRegistry()}
	m.inbound = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "inbound_messages_total",
		Help: "Messages received from platforms and accepted for processing.",
	}, []string{"platform"})
	m.duplicates = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "inbound_duplicates_total",
		Help: "Redelivered messages recognised as already handled.",
	}, []string{"platform"})
	m.outbound = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "outbound_messages_total",
		Help: "Delivery attempts to platforms by result (ok or error).",
	}, []string{"platform", "result"})
	m.turns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "turns_total",
		Help: "Finished Codex turns by status.",
	}, []string{"status"})
	m.turnLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: namespace, Name: "turn_duration_seconds",
		Help: "Time from turn start to its end, by status.",
		// Agent turns run from seconds to many minutes.
		Buckets: []float64{0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1200, 1800},
	}, []string{"status"})
	m.resumes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "thread_resumes_total",
		Help: "Thread bindings by outcome (loaded, resumed, started, replaced, error).",
	}, []string{"outcome"})
	m.platformErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "platform_errors_total",
		Help: "Platform errors by kind (rate_limited, permanent, transient, ...).",
	}, []string{"platform", "kind"})
	m.storeCommit = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: namespace, Name: "store_commit_duration_seconds",
		Help:    "Time for a store write transaction to commit.",
		Buckets: []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1},
	})
	m.buildInfo = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: namespace, Name: "build_info",
		Help: "Always 1; labelled with the running version.",
	}, []string{"version"})
	m.usage = newUsageMetrics(m.reg)
	m.webhooks = newWebhookDeliveries(m.reg)
	m.firings = newScheduleFirings(m.reg)
	m.reg.MustRegister(
		m.inbound, m.duplicates, m.outbound, m.turns, m.turnLatency, m.resumes,
		m.platformErrors, m.storeCommit, m.buildInfo,
		m.gauge("live_lanes", "Lanes whose Codex thread is loaded in the app-server.",
			func(s Sources) func() int { return s.LiveLanes }),
		m.gauge("queued_messages", "Messages waiting behind a running turn, over all lanes.",
			func(s Sources) func() int { return s.QueuedMessages }),
		m.gauge("running_turns", "Turns running now.",
			func(s Sources) func() int { return s.RunningTurns }),
		m.gauge("store_queue_depth", "Write requests waiting for the store's writer.",
			func(s Sources) func() int { return s.StoreQueueDepth }),
		m.gauge("schedules", "Scheduled prompts stored (/at, /every), over all lanes.",
			func(s Sources) func() int { return s.Schedules }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: namespace, Name: "app_server_restarts_total",
			Help: "Times the codex app-server process was restarted.",
		}, func() float64 {
			if f := m.source().AppServerRestarts; f != nil {
				return float64(f())
			}
			return 0
		}),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// gauge registers a gauge read from one Sources field at scrape time.
func (m *Metrics) gauge(name, help string, pick func(Sources) func() int) prometheus.GaugeFunc {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help},
		func() float64 {
			if f := pick(m.source()); f != nil {
				return float64(f())
			}
			return 0
		})
}

func (m *Metrics) source() Sources {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.sources
}

// Bind sets the scrape-time callbacks, replacing earlier ones.
func (m *Metrics) Bind(s Sources) {
	m.mu.Lock()
	m.sources = s
	m.mu.Unlock()
}

// SetVersion records the build version in gatewayd_build_info.
func (m *Metrics) SetVersion(version string) {
	m.buildInfo.Reset()
	m.buildInfo.WithLabelValues(version).Set(1)
}

// Registry is the registry the metrics live in (for tests and extra collectors).
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// The gateway.Observer methods follow. Label values come from our own code
// (platform names, statuses), never from user input, so cardinality stays
// bounded.

// Inbound counts a message accepted from platform.
func (m *Metrics) Inbound(platform string) { m.inbound.WithLabelValues(platform).Inc() }

// Duplicate counts a redelivered message that was recognised.
func (m *Metrics) Duplicate(platform string) { m.duplicates.WithLabelValues(platform).Inc() }

// TurnFinished counts a turn and observes its duration.
func (m *Metrics) TurnFinished(status string, d time.Duration) {
	m.turns.WithLabelValues(status).Inc()
	m.turnLatency.WithLabelValues(status).Observe(d.Seconds())
}

// Resume counts a thread binding outcome.
func (m *Metrics) Resume(outcome string) { m.resumes.WithLabelValues(outcome).Inc() }

// Outbound counts a delivery attempt; err == nil is a success.
func (m *Metrics) Outbound(platform string, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.outbound.WithLabelValues(platform, result).Inc()
}

// PlatformError counts a platform error of the given kind.
func (m *Metrics) PlatformError(platform, kind string) {
	m.platformErrors.WithLabelValues(platform, kind).Inc()
}

// StoreCommit observes one store commit's latency. Not part of
// gateway.Observer: the store (or a wrapper timing CommitTurn) calls it.
func (m *Metrics) StoreCommit(d time.Duration) { m.storeCommit.Observe(d.Seconds()) }
