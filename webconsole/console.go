package webconsole

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/gatewayd/gatewayd/gateway"
	"github.com/gatewayd/gatewayd/gateway/chat"
	"github.com/gatewayd/gatewayd/platforms/api"
	"github.com/gatewayd/gatewayd/store"
)

// The console routes are the web console's backend, shared with scripts.
// They are mounted on the API listener beside the API lane's own routes, so
// the Host and Origin guard of platforms/api runs before them; they check
// api.token themselves, like the admin routes (extra handlers get no token
// check from the API platform).
//
//	GET /api/lanes?limit=N&platform=P&q=TEXT        lanes, most recently active first
//	GET /api/lanes/{lane}                           one lane, with its last turn's usage
//	GET /api/lanes/{lane}/transcript?before=ID&limit=N  its messages of every session, newest first
//	    (role user, assistant, or notice: what gatewayd told the lane, refusals included)
//	GET /api/search?q=TEXT&limit=N                  transcript messages of every lane, best match first
//	GET /api/status, /api/models, /api/projects     see status.go
//	GET /api/account, POST /api/account/login, POST /api/account/api-key  see account.go
//
// {lane} is an API lane name (no ':') or a full session key (the grammar of
// chat.ParseSessionKey), path-escaped or with its ':' raw; anything else
// is refused 400 before the store is asked.
const (
	lanesDefaultLimit      = 100
	lanesMaxLimit          = 1000
	transcriptDefaultLimit = 50
	transcriptMaxLimit     = 500
	searchDefaultLimit     = 50
	searchMaxLimit         = 500
	maxSessionKeyBytes     = 1024
)

// ConsoleStore is what the console reads; *store.Store implements it.
type ConsoleStore interface {
	FindLanes(ctx context.Context, f store.LaneFilter) ([]store.Lane, error)
	Lane(ctx context.Context, key string) (store.Lane, error)
	TranscriptPage(ctx context.Context, key string, before int64, limit int) ([]store.Message, error)
	Search(ctx context.Context, query string, limit int) ([]store.Message, error)
	LastTurnUsage(ctx context.Context, key string) (store.TurnUsage, bool, error)
	LaneUsagePeriods(ctx context.Context, key, sender string, at time.Time, loc *time.Location) (store.UsagePeriods, error)
}

// LaneStater tells a lane's live work; *gateway.Gateway implements it.
type LaneStater interface {
	LaneState(key string) gateway.LaneState
}

// Console serves the console's JSON routes: lanes, transcripts and search
// from the store with each lane's live work, and the status, model and
// project routes (status.go).
type Console struct {
	st    ConsoleStore
	live  LaneStater
	token string
	dirs  Workdirs
	// statusSrc and modelSrc serve /api/status and /api/models (status.go);
	// without them those routes answer 503.
	statusSrc *StatusSources
	modelSrc  ModelSource
	// tools serves /api/mcp and /api/skills (tools.go); without it 503.
	tools ToolSource
	// goalSrc serves /api/goals (goals.go); without it 503.
	goalSrc GoalSource
	// account serves /api/account (account.go); without it 503.
	account AccountControl
	login   consoleLogin
}

// ConsoleConfig is what a Console reads. Status and Models may be nil:
// /api/status and /api/models then answer 503.
type ConsoleConfig struct {
	Store  ConsoleStore
	Live   LaneStater
	Token  string // api.token; "" admits every request
	Dirs   Workdirs
	Status *StatusSources
	Models ModelSource
	// Tools serves /api/mcp and /api/skills; nil → 503.
	Tools ToolSource
	// Goals serves /api/goals; nil → 503.
	Goals GoalSource
	// Account serves /api/account and /api/account/login; nil → 503.
	Account AccountControl
}

// NewConsole returns the console's handlers over cfg's sources.
func NewConsole(cfg ConsoleConfig) *Console {
	return &Console{st: cfg.Store, live: cfg.Live, token: cfg.Token, dirs: cfg.Dirs,
		statusSrc: cfg.Status, modelSrc: cfg.Models, tools: cfg.Tools, goalSrc: cfg.Goals, account: cfg.Account}
}

// Routes returns the console's patterns for api.Config.Handlers. They take
// every method so that a wrong one is answered 405 in JSON, not by the mux.
func (c *Console) Routes() map[string]http.Handler {
	return map[string]http.Handler{
		"/api/lanes":                   c.guard(c.listLanes),
		"/api/lanes/{lane}":            c.guard(c.showLane),
		"/api/lanes/{lane}/transcript": c.guard(c.transcript),
		"/api/search":                  c.guard(c.search),
		"/api/status":                  c.guard(c.status),
		"/api/models":                  c.guard(c.models),
		"/api/mcp":                     c.guard(c.mcp),
		"/api/skills":                  c.guard(c.skills),
		"/api/goals":                   c.guard(c.goals),
		"/api/projects":                c.guard(c.projects),
		"/api/account":                 c.guard(c.accountState),
		"/api/account/login":           c.guardPost(c.startLogin),
		"/api/account/api-key":         c.guardPost(c.loginAPIKey),
	}
}

// guard admits GET requests that carry the token (when one is set).
func (c *Console) guard(next http.HandlerFunc) http.Handler {
	return c.guardMethod(next, "GET", http.MethodGet, http.MethodHead)
}

// guardPost admits POST requests that carry the token (when one is set).
func (c *Console) guardPost(next http.HandlerFunc) http.Handler {
	return c.guardMethod(next, "POST", http.MethodPost)
}

// guardMethod admits requests that carry the token (when one is set) with
// one of methods; use names the method a refusal suggests.
func (c *Console) guardMethod(next http.HandlerFunc, use string, methods ...string) http.Handler {
	allow := strings.Join(methods, ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !bearerMatches(r, c.token) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="gatewayd"`)
			writeJSON(w, http.StatusUnauthorized, errorBody("missing or wrong bearer token"))
			return
		}
		if !slices.Contains(methods, r.Method) {
			w.Header().Set("Allow", allow)
			writeJSON(w, http.StatusMethodNotAllowed, errorBody(r.Method+" is not allowed here; use "+use))
			return
		}
		next(w, r)
	})
}

// bearerMatches says whether r carries token as its bearer token; with no
// token set every request does. The console and admin routes share it.
func bearerMatches(r *http.Request, token string) bool {
	if token == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1
}

func errorBody(msg string) map[string]string { return map[string]string{"error": msg} }

// consoleLane is a lane as the console shows it: the admin view plus the
// lane's live work.
type consoleLane struct {
	LaneView
	Title   string `json:"title,omitempty"`
	Queued  int    `json:"queued"`
	Running bool   `json:"running"`
}

// laneDetail is one lane with what is cheap to add for its page.
type laneDetail struct {
	consoleLane
	LastTurn *turnUsageView `json:"last_turn,omitempty"`
	// Usage is what the lane's turns spent today and this month (UTC).
	Usage *UsageView `json:"usage,omitempty"`
}

// turnUsageView is the usage of the lane's latest turn that reported any;
// context_tokens of context_window is the context in use after it.
type turnUsageView struct {
	TurnID            string    `json:"turn_id"`
	Status            string    `json:"status"`
	At                time.Time `json:"at"`
	TurnTokens        int64     `json:"turn_tokens"`
	InputTokens       int64     `json:"input_tokens"`
	CachedInputTokens int64     `json:"cached_input_tokens"`
	OutputTokens      int64     `json:"output_tokens"`
	ReasoningTokens   int64     `json:"reasoning_tokens"`
	TotalTokens       int64     `json:"total_tokens"`
	ContextTokens     int64     `json:"context_tokens"`
	ContextWindow     int64     `json:"context_window"`
}

type transcriptMessage struct {
	ID        int64     `json:"id"`
	SessionID int64     `json:"session_id"`
	Role      string    `json:"role"`
	Text      string    `json:"text"`
	TurnID    string    `json:"turn_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

type transcriptPage struct {
	Messages []transcriptMessage `json:"messages"`
	// NextBefore is the before= of the next (older) page; null on the last.
	NextBefore *int64 `json:"next_before"`
}

type searchResult struct {
	Lane      string    `json:"lane"`
	ID        int64     `json:"id"`
	SessionID int64     `json:"session_id"`
	Role      string    `json:"role"`
	Text      string    `json:"text"`
	TurnID    string    `json:"turn_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

func (c *Console) viewLane(l store.Lane) consoleLane {
	live := c.live.LaneState(l.SessionKey)
	return consoleLane{
		LaneView: ViewLane(l, c.dirs), Title: l.Meta["title"],
		Queued: live.Queued, Running: live.Running,
	}
}

func (c *Console) listLanes(w http.ResponseWriter, r *http.Request) {
	limit, err := limitParam(r, lanesDefaultLimit, lanesMaxLimit)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody(err.Error()))
		return
	}
	q := r.URL.Query()
	lanes, err := c.st.FindLanes(r.Context(), store.LaneFilter{
		Platform: q.Get("platform"), Contains: q.Get("q"), Limit: limit,
	})
	if err != nil {
		writeError(w, err)
		return
	}
	views := make([]consoleLane, 0, len(lanes))
	for _, l := range lanes {
		views = append(views, c.viewLane(l))
	}
	writeJSON(w, http.StatusOK, map[string]any{"lanes": views})
}

func (c *Console) showLane(w http.ResponseWriter, r *http.Request) {
	key, ok := laneParam(w, r)
	if !ok {
		return
	}
	l, err := c.st.Lane(r.Context(), key)
	if err != nil {
		writeLaneError(w, key, err)
		return
	}
	detail := laneDetail{consoleLane: c.viewLane(l)}
	tu, found, err := c.st.LastTurnUsage(r.Context(), key)
	if err != nil {
		writeError(w, err)
		return
	}
	if found {
		detail.LastTurn = viewTurnUsage(tu)
	}
	now := time.Now()
	spent, err := c.st.LaneUsagePeriods(r.Context(), key, "", now, nil)
	if err != nil {
		writeError(w, err)
		return
	}
	detail.Usage = ViewUsage(spent, now)
	writeJSON(w, http.StatusOK, detail)
}

func viewTurnUsage(tu store.TurnUsage) *turnUsageView {
	u := tu.Usage
	return &turnUsageView{
		TurnID: tu.TurnID, Status: tu.Status, At: tu.At,
		TurnTokens: u.TurnTokens, InputTokens: u.InputTokens, CachedInputTokens: u.CachedInputTokens,
		OutputTokens: u.OutputTokens, ReasoningTokens: u.ReasoningTokens, TotalTokens: u.TotalTokens,
		ContextTokens: u.ContextTokens, ContextWindow: u.ContextWindow,
	}
}

func (c *Console) transcript(w http.ResponseWriter, r *http.Request) {
	key, ok := laneParam(w, r)
	if !ok {
		return
	}
	limit, err := limitParam(r, transcriptDefaultLimit, transcriptMaxLimit)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody(err.Error()))
		return
	}
	before, err := beforeParam(r)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody(err.Error()))
		return
	}
	c.writeTranscriptPage(w, r, key, before, limit)
}

// writeTranscriptPage asks for one message more than the page holds, so
// next_before is null exactly when no older message exists.
func (c *Console) writeTranscriptPage(w http.ResponseWriter, r *http.Request, key string, before int64, limit int) {
	msgs, err := c.st.TranscriptPage(r.Context(), key, before, limit+1)
	if err != nil {
		writeLaneError(w, key, err)
		return
	}
	page := transcriptPage{Messages: make([]transcriptMessage, 0, min(len(msgs), limit))}
	if len(msgs) > limit {
		msgs = msgs[:limit]
		next := msgs[limit-1].ID
		page.NextBefore = &next
	}
	for _, m := range msgs {
		page.Messages = append(page.Messages, transcriptMessage{
			ID: m.ID, SessionID: m.SessionID, Role: m.Role, Text: m.Text, TurnID: m.TurnID, CreatedAt: m.CreatedAt,
		})
	}
	writeJSON(w, http.StatusOK, page)
}

func (c *Console) search(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query().Get("q")
	if strings.TrimSpace(q) == "" {
		writeJSON(w, http.StatusBadRequest, errorBody("search needs q: the words to find"))
		return
	}
	limit, err := limitParam(r, searchDefaultLimit, searchMaxLimit)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody(err.Error()))
		return
	}
	msgs, err := c.st.Search(r.Context(), q, limit)
	if err != nil {
		writeError(w, err)
		return
	}
	results := make([]searchResult, 0, len(msgs))
	for _, m := range msgs {
		results = append(results, searchResult{
			Lane: m.SessionKey, ID: m.ID, SessionID: m.SessionID, Role: m.Role, Text: m.Text,
			TurnID: m.TurnID, CreatedAt: m.CreatedAt,
		})
	}
	writeJSON(w, http.StatusOK, map[string]any{"results": results})
}

// laneParam resolves {lane} to a session key, or answers 400.
func laneParam(w http.ResponseWriter, r *http.Request) (string, bool) {
	key, err := laneKeyOf(r.PathValue("lane"))
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody(err.Error()))
		return "", false
	}
	return key, true
}

// laneKeyOf takes an API lane name (no ':') or a full session key (which
// always has one). The mux has already unescaped the path segment.
func laneKeyOf(raw string) (string, error) {
	if !strings.Contains(raw, ":") {
		key, ok := api.LaneSessionKey(raw)
		if !ok {
			return "", fmt.Errorf("lane %q: an API lane name is 1-128 of A-Z a-z 0-9 . _ - (a session key has ':')", raw)
		}
		return key, nil
	}
	return sessionKeyOf(raw)
}

// sessionKeyOf accepts exactly the session keys a lane can have
// (chat.ParseSessionKey), so a path segment that smuggles another
// route's path ("../admin/…") or any other text never reaches a handler
// as a key.
func sessionKeyOf(raw string) (string, error) {
	// Bounded first: the refusal quotes the key.
	if len(raw) > maxSessionKeyBytes || strings.IndexFunc(raw, unicode.IsControl) >= 0 {
		return "", errors.New("lane: a session key is at most 1024 bytes without control characters")
	}
	if _, err := chat.ParseSessionKey(raw); err != nil {
		return "", fmt.Errorf("lane %q is not a lane name (a session key such as v1:api:NAME or v1:telegram:dm:ID): %s",
			raw, strings.TrimPrefix(err.Error(), "gateway: "))
	}
	return raw, nil
}

// writeLaneError answers 404 for a lane the store does not know.
func writeLaneError(w http.ResponseWriter, key string, err error) {
	if errors.Is(err, store.ErrNotFound) {
		writeJSON(w, http.StatusNotFound, errorBody("no lane "+strconv.Quote(key)))
		return
	}
	writeError(w, err)
}

// limitParam reads limit=: absent means def; anything but a whole number
// from 1 to max is refused rather than silently changed.
func limitParam(r *http.Request, def, max int) (int, error) {
	s := r.URL.Query().Get("limit")
	if s == "" {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > max {
		return 0, fmt.Errorf("limit %q: want a whole number from 1 to %d", s, max)
	}
	return n, nil
}

// beforeParam reads before=: absent means from the newest message.
func beforeParam(r *http.Request) (int64, error) {
	s := r.URL.Query().Get("before")
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("before %q: want a message id (a whole number from 1)", s)
	}
	return n, nil
}
