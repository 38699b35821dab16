package webconsole

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/gatewayd/gatewayd/config"
	"github.com/gatewayd/gatewayd/files"
	"github.com/gatewayd/gatewayd/store"
)

// AdminPrefix is where the operator routes are mounted on the API listener.
// The running daemon owns the store's lock, so `gatewayd sessions` goes
// through these routes while it runs:
//
//	GET  /api/admin/sessions?limit=N            lanes, most recently active first
//	GET  /api/admin/sessions/{key}?limit=N      one lane and its current transcript
//	POST /api/admin/sessions/{key}/reset        the same as /reset in the lane
//	GET  /api/admin/search?q=TEXT&limit=N       transcript messages of every lane, best match first
//
// A POST must be Content-Type: application/json with an empty or {} body
// (415 otherwise), and {key} must be a session key (400 otherwise).
const AdminPrefix = "/api/admin/"

// SessionsBackend is what the sessions commands need; the daemon serves it
// from the store plus Gateway.ResetLane, the offline CLI from the store alone.
type SessionsBackend interface {
	Lanes(ctx context.Context, limit int) ([]store.Lane, error)
	Lane(ctx context.Context, key string) (store.Lane, error)
	Transcript(ctx context.Context, key string, limit int) ([]store.Message, error)
	Search(ctx context.Context, query string, limit int) ([]store.Message, error)
	Reset(ctx context.Context, key string) error
	// LaneUsagePeriods is what the lane's turns spent in the day and
	// the month holding at (store.Store's).
	LaneUsagePeriods(ctx context.Context, key, sender string, at time.Time, loc *time.Location) (store.UsagePeriods, error)
}

// LaneView is the JSON form of a lane, shared by the admin API and the CLI.
type LaneView struct {
	Key            string            `json:"key"`
	Platform       string            `json:"platform"`
	Kind           string            `json:"kind"`
	ChatID         string            `json:"chat_id,omitempty"`
	TopicID        string            `json:"topic_id,omitempty"`
	SessionID      int64             `json:"session_id"`
	ThreadID       string            `json:"thread_id,omitempty"`
	Binding        string            `json:"binding"`
	Generation     int64             `json:"generation"`
	Turns          int64             `json:"turns"`
	CreatedAt      time.Time         `json:"created_at"`
	LastActiveAt   time.Time         `json:"last_active_at"`
	SessionStarted time.Time         `json:"session_started_at"`
	Meta           map[string]string `json:"meta,omitempty"`
	// Project is the lane's project ("" = none); Directory is where it
	// works: the project's directory, else codex.cwd, as the serving
	// configuration says. Unconfigured: the stored project is not in it.
	Project      string `json:"project,omitempty"`
	Directory    string `json:"directory,omitempty"`
	Unconfigured bool   `json:"project_unconfigured,omitempty"`
	// Model, Effort and Verbose are the lane's own choices; "" means the
	// configured default.
	Model   string `json:"model"`
	Effort  string `json:"effort"`
	Verbose string `json:"verbose"`
}

// Workdirs says where lanes work, from the configuration: a project's
// directory, else codex.cwd, or with isolated lanes each lane's own
// directory under it (the gateway's rule, for the operator's view).
type Workdirs struct {
	Projects map[string]string
	Fallback string
	PerLane  bool // codex.isolation: lanes
}

// NewWorkdirs reads the projects, codex.cwd and codex.isolation of cfg.
func NewWorkdirs(cfg *config.Config) Workdirs {
	return Workdirs{Projects: cfg.Projects, Fallback: cfg.Codex.Cwd, PerLane: cfg.Codex.IsolatesLanes()}
}

// of returns the directory of the lane sessionKey whose project is name,
// and whether name is configured (or empty).
func (w Workdirs) of(sessionKey, name string) (dir string, known bool) {
	if dir, ok := w.Projects[name]; ok && name != "" {
		return dir, true
	}
	return w.fallback(sessionKey), name == ""
}

func (w Workdirs) fallback(sessionKey string) string {
	if w.PerLane {
		return files.WorkDir(w.Fallback, sessionKey)
	}
	return w.Fallback
}

// MessageView is the JSON form of a transcript message.
type MessageView struct {
	Lane      string    `json:"lane,omitempty"` // search results only
	Role      string    `json:"role"`
	Text      string    `json:"text"`
	TurnID    string    `json:"turn_id,omitempty"`
	CreatedAt time.Time `json:"created_at"`
}

// SessionView is one lane and its current transcript.
type SessionView struct {
	Lane       LaneView      `json:"lane"`
	Transcript []MessageView `json:"transcript"`
	Usage      *UsageView    `json:"usage,omitempty"`
}

// ViewLane is l as the operator sees it, with where it works per dirs.
func ViewLane(l store.Lane, dirs Workdirs) LaneView {
	binding := string(l.Binding)
	if binding == "" {
		binding = "none"
	}
	dir, known := dirs.of(l.SessionKey, l.Project)
	return LaneView{
		Project: l.Project, Directory: dir, Unconfigured: !known,
		Key: l.SessionKey, Platform: l.Platform, Kind: l.Kind, ChatID: l.ChatID, TopicID: l.TopicID,
		SessionID: l.SessionID, ThreadID: l.ThreadID, Binding: binding, Generation: l.Generation,
		Turns: l.Turns, CreatedAt: l.CreatedAt, LastActiveAt: l.LastActiveAt,
		SessionStarted: l.SessionStartedAt, Meta: l.Meta,
		Model: l.Model, Effort: l.Effort, Verbose: l.Verbose,
	}
}

func viewMessages(msgs []store.Message) []MessageView {
	out := make([]MessageView, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, MessageView{Role: m.Role, Text: m.Text, TurnID: m.TurnID, CreatedAt: m.CreatedAt})
	}
	return out
}

// Admin serves the admin routes. token, when set, is required as a
// bearer token (the API lane's token).
type Admin struct {
	backend SessionsBackend
	token   string
	dirs    Workdirs
	prune   func(context.Context) ([]string, error) // nil: no worktrees route
}

// WithPrune serves POST /api/admin/worktrees/prune with prune, which
// removes the worktrees kept past lanes.worktree_retention and returns
// their directories ({"removed": [...]}).
func (h *Admin) WithPrune(prune func(context.Context) ([]string, error)) *Admin {
	h.prune = prune
	return h
}

func (h *Admin) servePrune(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use POST"})
		return
	}
	removed, err := h.prune(r.Context())
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string][]string{"removed": append([]string{}, removed...)})
}

// NewAdmin returns the admin routes over backend; token, when set, is
// required as a bearer token.
func NewAdmin(backend SessionsBackend, token string, dirs Workdirs) *Admin {
	return &Admin{backend: backend, token: token, dirs: dirs}
}

func (h *Admin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !bearerMatches(r, h.token) {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "unauthorized"})
		return
	}
	if r.Method == http.MethodPost && !acceptJSONPost(w, r) {
		return
	}
	if r.URL.EscapedPath() == AdminPrefix+"search" {
		h.search(w, r, queryLimit(r, 50))
		return
	}
	if r.URL.EscapedPath() == AdminPrefix+"worktrees/prune" && h.prune != nil {
		h.servePrune(w, r)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.EscapedPath(), AdminPrefix+"sessions")
	if !ok {
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not found"})
		return
	}
	limit := queryLimit(r, 50)
	switch {
	case rest == "" || rest == "/":
		h.list(w, r, limit)
	case strings.HasSuffix(rest, "/reset"):
		h.reset(w, r, strings.TrimSuffix(strings.TrimPrefix(rest, "/"), "/reset"))
	default:
		h.show(w, r, strings.TrimPrefix(rest, "/"), limit)
	}
}

func (h *Admin) list(w http.ResponseWriter, r *http.Request, limit int) {
	if r.Method != http.MethodGet {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use GET"})
		return
	}
	lanes, err := h.backend.Lanes(r.Context(), limit)
	if err != nil {
		writeError(w, err)
		return
	}
	views := make([]LaneView, 0, len(lanes))
	for _, l := range lanes {
		views = append(views, ViewLane(l, h.dirs))
	}
	writeJSON(w, http.StatusOK, views)
}

func (h *Admin) show(w http.ResponseWriter, r *http.Request, escapedKey string, limit int) {
	if r.Method != http.MethodGet {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use GET"})
		return
	}
	key, ok := unescapeKey(w, escapedKey)
	if !ok {
		return
	}
	v, err := LoadSession(r.Context(), h.backend, h.dirs, key, limit)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (h *Admin) search(w http.ResponseWriter, r *http.Request, limit int) {
	if r.Method != http.MethodGet {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use GET"})
		return
	}
	q := r.URL.Query().Get("q")
	if strings.TrimSpace(q) == "" {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": "search needs q: the words to find"})
		return
	}
	msgs, err := h.backend.Search(r.Context(), q, limit)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, ViewFound(msgs))
}

// ViewFound is search results: messages that name their lane.
func ViewFound(msgs []store.Message) []MessageView {
	views := viewMessages(msgs)
	for i, m := range msgs {
		views[i].Lane = m.SessionKey
	}
	return views
}

func (h *Admin) reset(w http.ResponseWriter, r *http.Request, escapedKey string) {
	if r.Method != http.MethodPost {
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "use POST"})
		return
	}
	key, ok := unescapeKey(w, escapedKey)
	if !ok {
		return
	}
	if err := h.backend.Reset(r.Context(), key); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"reset": key})
}

// maxAdminBody bounds the body of an admin POST: the routes take no fields.
const maxAdminBody = 4 << 10

// acceptJSONPost answers 415 unless a POST says its body is JSON, and 400
// or 413 unless that body is empty or one JSON object ({}). The JSON type
// is the API's cross-site defence: a page may send a form or text/plain
// to another origin without the browser asking first, but never JSON.
func acceptJSONPost(w http.ResponseWriter, r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		writeJSON(w, http.StatusUnsupportedMediaType,
			errorBody("Content-Type must be application/json (send {} as the body)"))
		return false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxAdminBody))
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeJSON(w, http.StatusRequestEntityTooLarge, errorBody(fmt.Sprintf("request body exceeds %d bytes", maxAdminBody)))
		return false
	case err != nil:
		writeJSON(w, http.StatusBadRequest, errorBody("could not read the request body"))
		return false
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return true
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		writeJSON(w, http.StatusBadRequest, errorBody("the body must be a JSON object, such as {}"))
		return false
	}
	return true
}

// LoadSession reads the lane key and the last limit messages of its
// current transcript.
func LoadSession(ctx context.Context, b SessionsBackend, dirs Workdirs, key string, limit int) (SessionView, error) {
	l, err := b.Lane(ctx, key)
	if err != nil {
		return SessionView{}, err
	}
	msgs, err := b.Transcript(ctx, key, limit)
	if err != nil {
		return SessionView{}, err
	}
	now := time.Now()
	spent, err := b.LaneUsagePeriods(ctx, key, "", now, nil)
	if err != nil {
		return SessionView{}, err
	}
	return SessionView{Lane: ViewLane(l, dirs), Transcript: viewMessages(msgs), Usage: ViewUsage(spent, now)}, nil
}

// unescapeKey answers 400 unless the path segment is a session key.
func unescapeKey(w http.ResponseWriter, escaped string) (string, bool) {
	raw, err := url.PathUnescape(escaped)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody("bad session key: the path segment is not validly escaped"))
		return "", false
	}
	key, err := sessionKeyOf(raw)
	if err != nil {
		writeJSON(w, http.StatusBadRequest, errorBody(err.Error()))
		return "", false
	}
	return key, true
}

func queryLimit(r *http.Request, def int) int {
	n, err := strconv.Atoi(r.URL.Query().Get("limit"))
	if err != nil || n <= 0 {
		return def
	}
	return min(n, 1000)
}

func writeError(w http.ResponseWriter, err error) {
	code := http.StatusInternalServerError
	if errors.Is(err, store.ErrNotFound) {
		code = http.StatusNotFound
	}
	writeJSON(w, code, map[string]string{"error": err.Error()})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v) // a vanished client is not an error worth more
}
