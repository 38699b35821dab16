package metrics

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// observer mirrors gateway.Observer; the daemon asserts the real interface
// (importing gateway here would tie these tests to the router's build).
type observer interface {
	Inbound(platform string)
	Duplicate(platform string)
	TurnFinished(status string, d time.Duration)
	Resume(outcome string)
	Outbound(platform string, err error)
	PlatformError(platform, kind string)
}

var _ observer = (*Metrics)(nil)

func TestObserverCounters(t *testing.T) {
	m := New()
	m.Inbound("telegram")
	m.Inbound("telegram")
	m.Duplicate("discord")
	m.Outbound("api", nil)
	m.Outbound("api", errors.New("boom"))
	m.Outbound("api", errors.New("boom"))
	m.Resume("resumed")
	m.PlatformError("telegram", "rate_limited")
	m.TurnFinished("completed", 3*time.Second)
	m.TurnFinished("failed", 100*time.Millisecond)

	tests := []struct {
		name string
		got  float64
		want float64
	}{
		{"inbound telegram", testutil.ToFloat64(m.inbound.WithLabelValues("telegram")), 2},
		{"duplicate discord", testutil.ToFloat64(m.duplicates.WithLabelValues("discord")), 1},
		{"outbound ok", testutil.ToFloat64(m.outbound.WithLabelValues("api", "ok")), 1},
		{"outbound error", testutil.ToFloat64(m.outbound.WithLabelValues("api", "error")), 2},
		{"resumes", testutil.ToFloat64(m.resumes.WithLabelValues("resumed")), 1},
		{"platform errors", testutil.ToFloat64(m.platformErrors.WithLabelValues("telegram", "rate_limited")), 1},
		{"turns completed", testutil.ToFloat64(m.turns.WithLabelValues("completed")), 1},
		{"turns failed", testutil.ToFloat64(m.turns.WithLabelValues("failed")), 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestTurnLatencyHistogram(t *testing.T) {
	m := New()
	m.TurnFinished("completed", 3*time.Second)
	m.TurnFinished("completed", 45*time.Second)
	want := `
# HELP gatewayd_turn_duration_seconds Time from turn start to its end, by status.
# TYPE gatewayd_turn_duration_seconds histogram
gatewayd_turn_duration_seconds_bucket{status="completed",le="0.5"} 0
gatewayd_turn_duration_seconds_bucket{status="completed",le="1"} 0
gatewayd_turn_duration_seconds_bucket{status="completed",le="2.5"} 0
gatewayd_turn_duration_seconds_bucket{status="completed",le="5"} 1
gatewayd_turn_duration_seconds_bucket{status="completed",le="10"} 1
gatewayd_turn_duration_seconds_bucket{status="completed",le="30"} 1
gatewayd_turn_duration_seconds_bucket{status="completed",le="60"} 2
gatewayd_turn_duration_seconds_bucket{status="completed",le="120"} 2
gatewayd_turn_duration_seconds_bucket{status="completed",le="300"} 2
gatewayd_turn_duration_seconds_bucket{status="completed",le="600"} 2
gatewayd_turn_duration_seconds_bucket{status="completed",le="1200"} 2
gatewayd_turn_duration_seconds_bucket{status="completed",le="1800"} 2
gatewayd_turn_duration_seconds_bucket{status="completed",le="+Inf"} 2
gatewayd_turn_duration_seconds_sum{status="completed"} 48
gatewayd_turn_duration_seconds_count{status="completed"} 2
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "gatewayd_turn_duration_seconds"); err != nil {
		t.Error(err)
	}
}

func TestSourcesReadAtScrape(t *testing.T) {
	m := New()
	live, queued, restarts := 0, 0, int64(0)
	m.Bind(Sources{
		LiveLanes:         func() int { return live },
		QueuedMessages:    func() int { return queued },
		RunningTurns:      func() int { return 1 },
		StoreQueueDepth:   func() int { return 4 },
		AppServerRestarts: func() int64 { return restarts },
	})
	live, queued, restarts = 3, 7, 2
	want := `
# HELP gatewayd_live_lanes Lanes whose Codex thread is loaded in the app-server.
# TYPE gatewayd_live_lanes gauge
gatewayd_live_lanes 3
# HELP gatewayd_queued_messages Messages waiting behind a running turn, over all lanes.
# TYPE gatewayd_queued_messages gauge
gatewayd_queued_messages 7
# HELP gatewayd_running_turns Turns running now.
# TYPE gatewayd_running_turns gauge
gatewayd_running_turns 1
# HELP gatewayd_store_queue_depth Write requests waiting for the store's writer.
# TYPE gatewayd_store_queue_depth gauge
gatewayd_store_queue_depth 4
# HELP gatewayd_app_server_restarts_total Times the codex app-server process was restarted.
# TYPE gatewayd_app_server_restarts_total counter
gatewayd_app_server_restarts_total 2
`
	names := []string{"gatewayd_live_lanes", "gatewayd_queued_messages", "gatewayd_running_turns",
		"gatewayd_store_queue_depth", "gatewayd_app_server_restarts_total"}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), names...); err != nil {
		t.Error(err)
	}
}

func TestUnboundSourcesReadZero(t *testing.T) {
	m := New()
	m.Bind(Sources{LiveLanes: func() int { return 5 }})
	want := "# HELP gatewayd_store_queue_depth Write requests waiting for the store's writer.\n" +
		"# TYPE gatewayd_store_queue_depth gauge\ngatewayd_store_queue_depth 0\n"
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "gatewayd_store_queue_depth"); err != nil {
		t.Error(err)
	}
}

func TestStoreCommitHistogram(t *testing.T) {
	m := New()
	m.StoreCommit(2 * time.Millisecond)
	m.StoreCommit(200 * time.Millisecond)
	if n := testutil.CollectAndCount(m.storeCommit); n != 1 {
		t.Fatalf("collected %d metrics, want 1", n)
	}
	out := scrape(t, m)
	if !strings.Contains(out, "gatewayd_store_commit_duration_seconds_count 2") {
		t.Errorf("store commit count missing:\n%s", out)
	}
}

func TestHandlerServesOwnRegistry(t *testing.T) {
	m := New()
	m.SetVersion("1.2.3")
	m.Inbound("api")
	out := scrape(t, m)
	for _, want := range []string{
		`gatewayd_inbound_messages_total{platform="api"} 1`,
		`gatewayd_build_info{version="1.2.3"} 1`,
		"go_goroutines",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("scrape lacks %q", want)
		}
	}
	// A second instance is independent: no global registry.
	if strings.Contains(scrape(t, New()), `platform="api"`) {
		t.Error("a fresh Metrics sees another instance's counters")
	}
}

func scrape(t *testing.T, m *Metrics) string {
	t.Helper()
	rec := httptest.NewRecorder()
	m.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != 200 {
		t.Fatalf("status %d", rec.Code)
	}
	b, _ := io.ReadAll(rec.Body)
	return string(b)
}
