package webconsole_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/metrics"
	"github.com/gatewayd/gatewayd/platforms/api"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/webconsole"
)

// fakeCodexStatus is codex as the status page sees it.
type fakeCodexStatus struct {
	limits     codex.RateLimits
	hasLimits  bool
	account    codex.Account
	accountErr error
}

func (f *fakeCodexStatus) ServerVersion() string { return "0.169.0" }
func (f *fakeCodexStatus) UserAgent() string {
	return "gatewayd/0.169.0 (Debian 12; x86_64) xterm (gatewayd; 1.2.3)"
}
func (f *fakeCodexStatus) LastRateLimits() (codex.RateLimits, bool) { return f.limits, f.hasLimits }
func (f *fakeCodexStatus) Account(context.Context) (codex.Account, error) {
	return f.account, f.accountErr
}

// fakeModels is a model source with a fixed answer.
type fakeModels struct {
	models []codex.Model
	def    string
	err    error
}

func (f fakeModels) Models(context.Context) ([]codex.Model, string, error) {
	return f.models, f.def, f.err
}

type statusBody struct {
	Health   struct{ State, Reason string }
	Gatewayd struct {
		Version       string
		UptimeSeconds int64 `json:"uptime_seconds"`
	}
	Codex struct {
		Version       string
		PinnedVersion string `json:"pinned_version"`
		UserAgent     string `json:"user_agent"`
		Account       *struct {
			Type, Plan         string
			RequiresOpenAIAuth bool `json:"requires_openai_auth"`
			Usable             bool
			Email              string
		}
		AccountError string `json:"account_error"`
	}
	RateLimits *struct {
		LimitID string `json:"limit_id"`
		Windows []struct {
			Name          string
			UsedPercent   float64    `json:"used_percent"`
			WindowMinutes int64      `json:"window_minutes"`
			ResetsAt      *time.Time `json:"resets_at"`
		}
	} `json:"rate_limits"`
	Turns struct{ Running, Queued int }
	Lanes struct{ Live, Known int }
	Store struct {
		DatabaseBytes int64 `json:"database_bytes"`
		TotalBytes    int64 `json:"total_bytes"`
		Error         string
	}
	Metrics []struct {
		Name, Help string
		Labels     map[string]string
		Value      float64
	}
}

// pinnedCodexVersion stands for the daemon's pinned codex release, which
// the status answer repeats as given.
const pinnedCodexVersion = "0.171.0"

// statusWorld is newConsoleWorld with the status and model sources bound
// to fakes over its real store and a real metrics registry.
func newStatusWorld(t testing.TB, token string, cx *fakeCodexStatus, health error, models fakeModels) *consoleWorld {
	t.Helper()
	w := newConsoleWorld(t, token)
	m := metrics.New()
	m.SetVersion("1.2.3")
	stats := gateway.Stats{LiveLanes: 1, QueuedMessages: 2, RunningTurns: 3, ActiveLanes: 3}
	m.Bind(metrics.Sources{RunningTurns: func() int { return stats.RunningTurns }})
	m.TurnFinished("completed", 1500*time.Millisecond)
	started := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := webconsole.NewConsole(webconsole.ConsoleConfig{Store: w.st, Live: w.live, Token: token, Dirs: webconsole.Workdirs{
		Projects: map[string]string{"web": "/srv/web", "api": "/srv/api"}, Fallback: "/srv/work"},
		Status: &webconsole.StatusSources{
			Health: func(context.Context) error { return health }, Codex: cx,
			Stats: func() gateway.Stats { return stats }, Store: w.st, Metrics: m.Registry(),
			Version: "1.2.3", PinnedCodexVersion: pinnedCodexVersion,
			Started: started, Now: func() time.Time { return started.Add(90 * time.Minute) },
		},
		Models: models,
	})
	p := api.New(api.Config{Listen: "127.0.0.1:0", Token: token, Answers: w.st, Handlers: c.Routes()})
	w.srv.Config.Handler = p.Handler()
	return w
}

var statusPaths = []string{"/api/status", "/api/models", "/api/projects"}

func TestConsoleStatusRoutesNeedTheToken(t *testing.T) {
	w := newStatusWorld(t, "s3cret", &fakeCodexStatus{}, nil, fakeModels{})
	for _, path := range statusPaths {
		for name, hdr := range map[string]map[string]string{
			"missing": nil,
			"wrong":   {"Authorization": "Bearer nope"},
		} {
			var body map[string]any
			if code := w.get(t, path, hdr, &body); code != http.StatusUnauthorized || body["error"] == "" {
				t.Errorf("%s, token %s: %d %v, want 401 with an error", path, name, code, body)
			}
		}
		if code := w.get(t, path, map[string]string{"Authorization": "Bearer s3cret"}, nil); code != http.StatusOK {
			t.Errorf("%s with the token: %d, want 200", path, code)
		}
		var body map[string]string
		if code := w.do(t, http.MethodPost, path, map[string]string{"Authorization": "Bearer s3cret"}, &body); code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: %d %v, want 405", path, code, body)
		}
	}
}

// The status answer carries each part from its source: health as the
// probe says, the versions, the account without its e-mail, the rate-limit
// windows, the load, the lanes the store knows, its size and the metrics.
func TestConsoleStatusShape(t *testing.T) {
	resets := time.Date(2026, 12, 1, 13, 0, 0, 0, time.UTC)
	cx := &fakeCodexStatus{
		account:   codex.Account{Type: "chatgpt", Email: "someone@example.com", PlanType: "plus", RequiresOpenAIAuth: true},
		hasLimits: true,
		limits: codex.RateLimits{LimitID: "codex", Windows: []codex.RateLimitWindow{
			{Name: "primary", UsedPercent: 42.5, WindowMinutes: 300, ResetsAt: resets},
			{Name: "secondary", UsedPercent: 7},
		}},
	}
	w := newStatusWorld(t, "", cx, errors.New("codex: not answering"), fakeModels{})
	var got statusBody
	if code := w.get(t, "/api/status", nil, &got); code != http.StatusOK {
		t.Fatalf("GET /api/status: %d", code)
	}
	if got.Health.State != "unavailable" || got.Health.Reason != "codex: not answering" {
		t.Errorf("health %+v, want unavailable with the probe's reason", got.Health)
	}
	if got.Gatewayd.Version != "1.2.3" || got.Gatewayd.UptimeSeconds != 90*60 {
		t.Errorf("gatewayd %+v, want version 1.2.3 and 5400 s up", got.Gatewayd)
	}
	if got.Codex.Version != "0.169.0" || got.Codex.PinnedVersion != pinnedCodexVersion || !strings.HasPrefix(got.Codex.UserAgent, "gatewayd/0.169.0") {
		t.Errorf("codex %+v, want the version, the pinned one and the user agent", got.Codex)
	}
	if a := got.Codex.Account; a == nil || a.Type != "chatgpt" || a.Plan != "plus" || !a.Usable || a.Email != "" {
		t.Errorf("account %+v, want chatgpt/plus, usable, and no e-mail", a)
	}
	if got.RateLimits == nil || len(got.RateLimits.Windows) != 2 {
		t.Fatalf("rate limits %+v, want two windows", got.RateLimits)
	}
	p := got.RateLimits.Windows[0]
	if p.Name != "primary" || p.UsedPercent != 42.5 || p.WindowMinutes != 300 || p.ResetsAt == nil || !p.ResetsAt.Equal(resets) {
		t.Errorf("primary window %+v", p)
	}
	if s := got.RateLimits.Windows[1]; s.ResetsAt != nil {
		t.Errorf("secondary window %+v: an unknown reset must be absent", s)
	}
	if got.Turns.Running != 3 || got.Turns.Queued != 2 || got.Lanes.Live != 1 || got.Lanes.Known != 3 {
		t.Errorf("turns %+v lanes %+v, want 3 running, 2 queued, 1 live of 3 known", got.Turns, got.Lanes)
	}
	if got.Store.DatabaseBytes <= 0 || got.Store.TotalBytes < got.Store.DatabaseBytes || got.Store.Error != "" {
		t.Errorf("store %+v, want the file's bytes", got.Store)
	}
	values := map[string]float64{}
	for _, m := range got.Metrics {
		if m.Help == "" {
			t.Errorf("metric %s has no help text", m.Name)
		}
		if strings.HasPrefix(m.Name, "go_gc") {
			t.Errorf("metric %s shown; only gatewayd's and a few runtime ones belong", m.Name)
		}
		values[m.Name+labelString(m.Labels)] = m.Value
	}
	for name, want := range map[string]float64{
		"gatewayd_running_turns":                                 3,
		"gatewayd_turns_total{status=completed}":                 1,
		"gatewayd_turn_duration_seconds_count{status=completed}": 1,
		"gatewayd_turn_duration_seconds_sum{status=completed}":   1.5,
		"gatewayd_build_info{version=1.2.3}":                     1,
	} {
		if v, ok := values[name]; !ok || v != want {
			t.Errorf("metric %s = %v (shown %v), want %v", name, v, ok, want)
		}
	}
}

func labelString(labels map[string]string) string {
	if len(labels) != 1 {
		return ""
	}
	for k, v := range labels {
		return "{" + k + "=" + v + "}"
	}
	return ""
}

// Without rate limits (an API-key account has none) or an account answer,
// the status still answers, saying so.
func TestConsoleStatusWithoutLimitsOrAccount(t *testing.T) {
	w := newStatusWorld(t, "", &fakeCodexStatus{accountErr: errors.New("codex: account/read: timeout")}, nil, fakeModels{})
	var got statusBody
	if code := w.get(t, "/api/status", nil, &got); code != http.StatusOK {
		t.Fatalf("GET /api/status: %d", code)
	}
	if got.Health.State != "ok" || got.RateLimits != nil || got.Codex.Account != nil || !strings.Contains(got.Codex.AccountError, "timeout") {
		t.Errorf("health %+v limits %+v account %+v (%q); want ok, null, null and the error", got.Health, got.RateLimits, got.Codex.Account, got.Codex.AccountError)
	}
}

func TestConsoleModels(t *testing.T) {
	models := []codex.Model{
		{ID: "alpha", DisplayName: "Alpha", DefaultEffort: "medium", Efforts: []string{"medium", "high"}, IsDefault: true},
		{ID: "secret", Hidden: true, Efforts: []string{"low"}},
		{ID: "beta", DisplayName: "Beta"},
	}
	w := newStatusWorld(t, "", &fakeCodexStatus{}, nil, fakeModels{models: models, def: "alpha"})
	var got struct {
		Default string
		Models  []struct {
			ID          string
			DisplayName string `json:"display_name"`
			Efforts     []string
			IsDefault   bool `json:"is_default"`
		}
	}
	if code := w.get(t, "/api/models", nil, &got); code != http.StatusOK {
		t.Fatalf("GET /api/models: %d", code)
	}
	if got.Default != "alpha" || len(got.Models) != 2 || got.Models[0].ID != "alpha" || got.Models[1].ID != "beta" {
		t.Fatalf("models %+v, want alpha (default) and beta, the hidden one left out", got)
	}
	if m := got.Models[0]; m.DisplayName != "Alpha" || strings.Join(m.Efforts, ",") != "medium,high" || !m.IsDefault {
		t.Errorf("alpha %+v", m)
	}
	if m := got.Models[1]; m.Efforts == nil {
		t.Errorf("beta's efforts are null, want [] so the page need not check")
	}

	failing := newStatusWorld(t, "", &fakeCodexStatus{}, nil, fakeModels{err: errors.New("model/list: boom")})
	var body map[string]string
	if code := failing.get(t, "/api/models", nil, &body); code != http.StatusBadGateway || !strings.Contains(body["error"], "boom") {
		t.Errorf("failing list: %d %v, want 502 naming the failure", code, body)
	}
}

func TestConsoleProjects(t *testing.T) {
	w := newStatusWorld(t, "", &fakeCodexStatus{}, nil, fakeModels{})
	var got struct {
		Projects         []struct{ Name, Directory string }
		DefaultDirectory string `json:"default_directory"`
	}
	if code := w.get(t, "/api/projects", nil, &got); code != http.StatusOK {
		t.Fatalf("GET /api/projects: %d", code)
	}
	if len(got.Projects) != 2 || got.Projects[0].Name != "api" || got.Projects[0].Directory != "/srv/api" ||
		got.Projects[1].Name != "web" || got.DefaultDirectory != "/srv/work" {
		t.Errorf("projects %+v, want api and web sorted, and the default directory", got)
	}
}

// A console without the sources (as the route tests build it) answers
// 503 with a message rather than failing.
func TestConsoleStatusWithoutSources(t *testing.T) {
	w := newConsoleWorld(t, "")
	for _, path := range []string{"/api/status", "/api/models"} {
		var body map[string]string
		if code := w.get(t, path, nil, &body); code != http.StatusServiceUnavailable || body["error"] == "" {
			t.Errorf("%s: %d %v, want 503 with a message", path, code, body)
		}
	}
}

// BenchmarkConsoleStatus is one /api/status answer over a real store and
// the daemon's metrics registry (codex faked): the page asks every 2.5 s
// per open tab, so its cost is per poll.
func BenchmarkConsoleStatus(b *testing.B) {
	w := newStatusWorld(b, "", &fakeCodexStatus{hasLimits: true, limits: codex.RateLimits{
		Windows: []codex.RateLimitWindow{{Name: "primary", UsedPercent: 10, WindowMinutes: 300}}}}, nil, fakeModels{})
	req, _ := http.NewRequest(http.MethodGet, w.srv.URL+"/api/status", nil)
	b.ReportAllocs()
	for b.Loop() {
		resp, err := w.srv.Client().Do(req)
		if err != nil {
			b.Fatal(err)
		}
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("status %d", resp.StatusCode)
		}
		resp.Body.Close()
	}
}
