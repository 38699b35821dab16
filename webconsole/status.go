package webconsole

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/runtime/codex"
	"github.com/gatewayd/gatewayd/store"
)

// The console's status and choice routes, beside the lane routes:
//
//	GET /api/status    health, versions, account, rate limits, load, store size, metrics
//	GET /api/models    codex's models (model/list) with their efforts, and the default
//	GET /api/projects  the configured projects and the default directory

// statusCallTimeout bounds the codex calls one status answer makes
// (account/read): the page polls, and a hung codex must not pile them up.
const statusCallTimeout = 5 * time.Second

// CodexStatus is what the status page asks of codex; *codex.Client has it.
type CodexStatus interface {
	ServerVersion() string
	UserAgent() string
	LastRateLimits() (codex.RateLimits, bool)
	Account(ctx context.Context) (codex.Account, error)
}

// StoreStatus is what the status page asks of the store; *store.Store has it.
type StoreStatus interface {
	Size(context.Context) (store.Size, error)
	CountLanes(ctx context.Context) (int, error)
}

// ModelSource lists codex's models; the models feature is one.
type ModelSource interface {
	Models(ctx context.Context) ([]codex.Model, string, error)
}

// StatusSources are what GET /api/status reads; the daemon fills them.
type StatusSources struct {
	Health  func(ctx context.Context) error // as /healthz decides
	Codex   CodexStatus
	Stats   func() gateway.Stats
	Store   StoreStatus
	Metrics prometheus.Gatherer
	Version string // gatewayd's
	// PinnedCodexVersion is the codex release this gatewayd was verified
	// with (what doctor checks), shown beside the running one.
	PinnedCodexVersion string
	Started            time.Time // of the daemon, for the uptime
	Now                func() time.Time
}

type statusReport struct {
	Health     healthView      `json:"health"`
	Gatewayd   gatewaydView    `json:"gatewayd"`
	Codex      codexView       `json:"codex"`
	RateLimits *rateLimitsView `json:"rate_limits"` // null until codex reports any
	Turns      turnsView       `json:"turns"`
	Lanes      lanesView       `json:"lanes"`
	Store      storeView       `json:"store"`
	Metrics    []metricView    `json:"metrics"`
}

type healthView struct {
	State  string `json:"state"` // "ok" or "unavailable", as /healthz says
	Reason string `json:"reason,omitempty"`
}

type gatewaydView struct {
	Version       string    `json:"version"`
	StartedAt     time.Time `json:"started_at"`
	UptimeSeconds int64     `json:"uptime_seconds"`
}

type codexView struct {
	Version       string       `json:"version"` // "" before the first handshake
	PinnedVersion string       `json:"pinned_version"`
	UserAgent     string       `json:"user_agent"`
	Account       *accountView `json:"account"` // null when account/read failed
	AccountError  string       `json:"account_error,omitempty"`
}

// accountView leaves out the account's e-mail address: the page is shown
// on screens and in screenshots, and the plan says what an operator needs.
type accountView struct {
	Type               string `json:"type"` // "" with no account
	Plan               string `json:"plan,omitempty"`
	RequiresOpenAIAuth bool   `json:"requires_openai_auth"`
	Usable             bool   `json:"usable"`
}

type rateLimitsView struct {
	LimitID     string           `json:"limit_id,omitempty"`
	ReachedType string           `json:"reached_type,omitempty"`
	Windows     []rateWindowView `json:"windows"`
}

type rateWindowView struct {
	Name          string     `json:"name"` // primary, secondary
	UsedPercent   float64    `json:"used_percent"`
	WindowMinutes int64      `json:"window_minutes,omitempty"`
	ResetsAt      *time.Time `json:"resets_at,omitempty"`
}

type turnsView struct {
	Running     int `json:"running"`
	Queued      int `json:"queued"`
	ActiveLanes int `json:"active_lanes"`
}

type lanesView struct {
	Live  int `json:"live"`
	Known int `json:"known"`
}

type storeView struct {
	DatabaseBytes int64  `json:"database_bytes"`
	WALBytes      int64  `json:"wal_bytes"`
	TotalBytes    int64  `json:"total_bytes"`
	Error         string `json:"error,omitempty"`
}

// metricView is one sample of /metrics; a histogram gives its count and
// sum as two.
type metricView struct {
	Name   string            `json:"name"`
	Help   string            `json:"help"`
	Labels map[string]string `json:"labels,omitempty"`
	Value  float64           `json:"value"`
}

// shownRuntimeMetrics are the Go and process metrics a person reading the
// status page cares about; every gatewayd_* metric is shown too.
var shownRuntimeMetrics = []string{
	"process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds", "go_goroutines",
}

func (c *Console) status(w http.ResponseWriter, r *http.Request) {
	s := c.statusSrc
	if s == nil {
		writeJSON(w, http.StatusServiceUnavailable, errorBody("status is not available in this process"))
		return
	}
	ctx := r.Context()
	now := s.Now()
	st := s.Stats()
	rep := statusReport{
		Health:   healthOf(s.Health(ctx)),
		Gatewayd: gatewaydView{Version: s.Version, StartedAt: s.Started, UptimeSeconds: int64(now.Sub(s.Started).Seconds())},
		Codex:    codexOf(ctx, s.Codex, s.PinnedCodexVersion),
		Turns:    turnsView{Running: st.RunningTurns, Queued: st.QueuedMessages, ActiveLanes: st.ActiveLanes},
		Lanes:    lanesView{Live: st.LiveLanes},
		Store:    storeOf(ctx, s.Store),
		Metrics:  []metricView{},
	}
	if limits, ok := s.Codex.LastRateLimits(); ok {
		rep.RateLimits = rateLimitsOf(limits)
	}
	known, err := s.Store.CountLanes(ctx)
	if err != nil {
		writeError(w, err)
		return
	}
	rep.Lanes.Known = known
	if s.Metrics != nil {
		families, err := s.Metrics.Gather()
		if err != nil {
			writeError(w, err)
			return
		}
		rep.Metrics = metricsOf(families)
	}
	writeJSON(w, http.StatusOK, rep)
}

func healthOf(err error) healthView {
	if err != nil {
		return healthView{State: "unavailable", Reason: err.Error()}
	}
	return healthView{State: "ok"}
}

func codexOf(ctx context.Context, cx CodexStatus, pinned string) codexView {
	v := codexView{Version: cx.ServerVersion(), PinnedVersion: pinned, UserAgent: cx.UserAgent()}
	ctx, cancel := context.WithTimeout(ctx, statusCallTimeout)
	defer cancel()
	a, err := cx.Account(ctx)
	if err != nil {
		v.AccountError = err.Error()
		return v
	}
	v.Account = &accountView{Type: a.Type, Plan: a.PlanType, RequiresOpenAIAuth: a.RequiresOpenAIAuth, Usable: a.Usable()}
	return v
}

func rateLimitsOf(r codex.RateLimits) *rateLimitsView {
	out := &rateLimitsView{LimitID: r.LimitID, ReachedType: r.ReachedType, Windows: []rateWindowView{}}
	for _, w := range r.Windows {
		rw := rateWindowView{Name: w.Name, UsedPercent: w.UsedPercent, WindowMinutes: w.WindowMinutes}
		if !w.ResetsAt.IsZero() {
			at := w.ResetsAt.UTC()
			rw.ResetsAt = &at
		}
		out.Windows = append(out.Windows, rw)
	}
	return out
}

// storeOf reports a size it cannot read as an error in the answer: the
// rest of the page is still worth showing.
func storeOf(ctx context.Context, st StoreStatus) storeView {
	z, err := st.Size(ctx)
	if err != nil {
		return storeView{Error: err.Error()}
	}
	return storeView{DatabaseBytes: z.DatabaseBytes, WALBytes: z.WALBytes, TotalBytes: z.Total()}
}

func metricsOf(families []*dto.MetricFamily) []metricView {
	out := []metricView{}
	for _, f := range families {
		name := f.GetName()
		if !strings.HasPrefix(name, "gatewayd_") && !slices.Contains(shownRuntimeMetrics, name) {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := labelsOf(m)
			add := func(suffix string, v float64) {
				out = append(out, metricView{Name: name + suffix, Help: f.GetHelp(), Labels: labels, Value: v})
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				add("", m.GetCounter().GetValue())
			case dto.MetricType_GAUGE:
				add("", m.GetGauge().GetValue())
			case dto.MetricType_HISTOGRAM:
				add("_count", float64(m.GetHistogram().GetSampleCount()))
				add("_sum", m.GetHistogram().GetSampleSum())
			case dto.MetricType_UNTYPED:
				add("", m.GetUntyped().GetValue())
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func labelsOf(m *dto.Metric) map[string]string {
	if len(m.GetLabel()) == 0 {
		return nil
	}
	labels := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	return labels
}

type modelView struct {
	ID            string   `json:"id"`
	DisplayName   string   `json:"display_name,omitempty"`
	Description   string   `json:"description,omitempty"`
	DefaultEffort string   `json:"default_effort,omitempty"`
	Efforts       []string `json:"efforts"`
	IsDefault     bool     `json:"is_default"`
}

// models answers codex's model list. The codex client already drops the
// models codex marks hidden; a source that does not is filtered here too,
// so the page never offers one.
func (c *Console) models(w http.ResponseWriter, r *http.Request) {
	if c.modelSrc == nil {
		writeJSON(w, http.StatusServiceUnavailable, errorBody("models are not available in this process"))
		return
	}
	models, def, err := c.modelSrc.Models(r.Context())
	if err != nil {
		writeJSON(w, http.StatusBadGateway, errorBody("codex did not list its models: "+err.Error()))
		return
	}
	views := []modelView{}
	for _, m := range models {
		if m.Hidden {
			continue
		}
		efforts := m.Efforts
		if efforts == nil {
			efforts = []string{}
		}
		views = append(views, modelView{ID: m.ID, DisplayName: m.DisplayName, Description: m.Description,
			DefaultEffort: m.DefaultEffort, Efforts: efforts, IsDefault: m.IsDefault})
	}
	writeJSON(w, http.StatusOK, map[string]any{"models": views, "default": def})
}

type projectView struct {
	Name      string `json:"name"`
	Directory string `json:"directory"`
}

// projects answers the configured projects, sorted by name, and where a
// lane without one works.
func (c *Console) projects(w http.ResponseWriter, r *http.Request) {
	views := make([]projectView, 0, len(c.dirs.Projects))
	for name, dir := range c.dirs.Projects {
		views = append(views, projectView{Name: name, Directory: dir})
	}
	sort.Slice(views, func(i, j int) bool { return views[i].Name < views[j].Name })
	writeJSON(w, http.StatusOK, map[string]any{"projects": views, "default_directory": c.dirs.Fallback})
}
