package main

import (
	"context"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/client"
	"github.com/gatewayd/gatewayd/cmd/gatewayd/internal/doctor"
	"github.com/gatewayd/gatewayd/internal/poll"
	"github.com/gatewayd/gatewayd/runtime/codex/codextest"
)

// The built daemon with the real codex: /api/status names the version the
// binary prints and, after a reply that carried rate-limit headers, the
// window codex reported; /api/models is codex's own list with efforts;
// /api/projects the configured ones.
func TestProcessStatusWithTheRealCodex(t *testing.T) {
	resets := time.Now().Add(3 * time.Hour).Truncate(time.Second)
	s := newDaemonSetup(t)
	model := s.model
	dir := s.dir
	model.Respond(func(req codextest.Request) codextest.Reply {
		r := codextest.DefaultReply(req)
		r.Headers = codextest.RateLimitHeaders(37, 300, resets)
		return r
	})
	proj := filepath.Join(dir, "proj")
	if err := os.MkdirAll(proj, 0o700); err != nil {
		t.Fatal(err)
	}
	s.configure(t, map[string]any{
		"api":      map[string]any{"token": "tok"},
		"projects": map[string]any{"proj": proj},
	})
	api := s.api
	d := s.start(t, "status")

	resp, err := http.Get(api.Base + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("GET /api/status without the token: %d, want 401", resp.StatusCode)
	}

	if reply := postMessage(t, api, "status", "hello"); reply != "ECHO: hello" {
		t.Fatalf("reply %q", reply)
	}
	got := waitStatus(t, api, func(s statusBody) bool { return s.RateLimits != nil && len(s.RateLimits.Windows) > 0 })
	out, err := exec.Command(codextest.CodexBinary(t), "--version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if want := doctor.CodexVersion(string(out)); got.Codex.Version != want || want != doctor.PinnedCodexVersion {
		t.Errorf("status codex version %q (user agent %q), `codex --version` %q, pinned %s", got.Codex.Version, got.Codex.UserAgent, want, doctor.PinnedCodexVersion)
	}
	t.Logf("codex user agent: %s", got.Codex.UserAgent)
	w := got.RateLimits.Windows[0]
	if w.Name != "primary" || w.UsedPercent != 37 || w.WindowMinutes != 300 || w.ResetsAt == nil || !w.ResetsAt.Equal(resets) {
		t.Errorf("primary window %+v, want 37%% of 300 min resetting at %v", w, resets)
	}
	if got.Health.State != "ok" || got.Codex.Account == nil || !got.Codex.Account.Usable {
		t.Errorf("health %+v account %+v, want ok and a usable provider", got.Health, got.Codex.Account)
	}
	if got.Lanes.Known != 1 || got.Store.DatabaseBytes <= 0 || got.Gatewayd.Version == "" {
		t.Errorf("lanes %+v store %+v gatewayd %+v", got.Lanes, got.Store, got.Gatewayd)
	}

	var models struct {
		Default string
		Models  []struct {
			ID      string
			Efforts []string
		}
	}
	if err := api.Do(context.Background(), http.MethodGet, "/api/models", nil, &models); err != nil {
		t.Fatal(err)
	}
	if len(models.Models) == 0 || models.Models[0].ID == "" || len(models.Models[0].Efforts) == 0 {
		t.Errorf("models %+v, want codex's list with efforts", models)
	}
	var projects struct {
		Projects []struct{ Name, Directory string }
	}
	if err := api.Do(context.Background(), http.MethodGet, "/api/projects", nil, &projects); err != nil {
		t.Fatal(err)
	}
	if len(projects.Projects) != 1 || projects.Projects[0].Name != "proj" || projects.Projects[0].Directory != proj {
		t.Errorf("projects %+v, want proj at %s", projects.Projects, proj)
	}
	if code := d.terminate(t, 30*time.Second); code != 0 {
		t.Errorf("exit after SIGTERM = %d", code)
	}
}

// statusBody is /api/status as a client decodes it (the webconsole tests
// decode it the same way).
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

// waitStatus polls /api/status until ok holds: codex reports rate limits
// on its own notification, after the reply may already be delivered.
func waitStatus(t *testing.T, api *client.API, ok func(statusBody) bool) statusBody {
	t.Helper()
	var s statusBody
	var err error
	if !poll.Wait(30*time.Second, nil, func() bool {
		s = statusBody{}
		err = api.Do(context.Background(), http.MethodGet, "/api/status", nil, &s)
		return err != nil || ok(s)
	}) {
		t.Fatalf("status never got there: %+v", s)
	}
	if err != nil {
		t.Fatal(err)
	}
	return s
}
