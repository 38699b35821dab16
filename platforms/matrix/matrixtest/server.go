// Package matrixtest is a fake Matrix homeserver for the adapter's tests:
// the client-server API subset mautrix uses (sync, send with transaction
// ids, redact, typing, receipts, members, state, media), one global event
// log, and fault injection (rate limits, 5xx, lost answers, hung syncs).
// It listens on 127.0.0.1 only.
package matrixtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// Server is the fake homeserver.
type Server struct {
	URL string
	srv *httptest.Server

	mu      sync.Mutex
	wake    chan struct{} // closed and replaced whenever the log grows
	log     []*Event      // position n+1 is log[n]; a sync token "s<n>" means "after n"
	byID    map[string]*Event
	rooms   map[string]*room
	tokens  map[string]string // access token → user id
	txns    map[string]string // token|txn → event id
	filters map[string]int    // filter id → timeline limit
	media   map[string]Media
	nextID  int

	// observations
	txnReplays int
	typing     []Typing
	receipts   []Receipt
	requests   map[string]int // "METHOD route" → count

	faults  []*fault
	lose    map[string]int // route → answers to drop after applying
	holds   int            // syncs to hang until the client gives up
	held    []*Held        // requests to hold (Hold)
	early   int            // requests that came before a 429's retry-after elapsed
	legacy  bool           // only the legacy media download path
	nulls   int            // answers to salt with JSON nulls (InjectNulls)
	closing chan struct{}
}

// Event is one event in the log.
type Event struct {
	Pos      int            `json:"-"`
	ID       string         `json:"event_id"`
	Room     string         `json:"-"`
	Sender   string         `json:"sender"`
	Type     string         `json:"type"`
	StateKey *string        `json:"state_key,omitempty"`
	Content  map[string]any `json:"content"`
	TS       int64          `json:"origin_server_ts"`
	Redacts  string         `json:"redacts,omitempty"`
	TxnID    string         `json:"-"`
	token    string
}

// Media is one uploaded file.
type Media struct {
	Data []byte
	Type string
	Name string
}

// Typing is one typing notification the fake received.
type Typing struct {
	Room   string
	User   string
	Typing bool
}

// Receipt is one read receipt the fake received.
type Receipt struct {
	Room, Event, Thread string
}

type room struct {
	id      string
	members map[string]string // user → membership
	state   map[string]*Event // type|state_key → event
}

// BotToken is the access token of BotUser.
const (
	BotUser  = "@bot:fake.test"
	BotToken = "bot-token"
)

// New starts a fake with the bot user registered.
func New(t testing.TB) *Server {
	s := &Server{
		wake: make(chan struct{}), byID: map[string]*Event{}, rooms: map[string]*room{},
		tokens: map[string]string{BotToken: BotUser}, txns: map[string]string{}, filters: map[string]int{},
		media: map[string]Media{}, requests: map[string]int{}, lose: map[string]int{}, closing: make(chan struct{}),
	}
	mux := http.NewServeMux()
	s.routes(mux)
	s.srv = httptest.NewServer(s.middleware(mux))
	s.URL = s.srv.URL
	t.Cleanup(s.Close)
	return s
}

// Close stops the server, releasing hung syncs.
func (s *Server) Close() {
	s.mu.Lock()
	select {
	case <-s.closing:
	default:
		close(s.closing)
	}
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

// AddUser registers a user with an access token.
func (s *Server) AddUser(user, token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[token] = user
}

// middleware checks the bearer token, counts the request and applies the
// injected faults before the handler runs.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/_matrix/client/versions" {
			next.ServeHTTP(w, r)
			return
		}
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		user := s.tokens[tok]
		s.mu.Unlock()
		switch {
		case !ok:
			writeError(w, 401, "M_MISSING_TOKEN", "Missing access token")
			return
		case user == "":
			writeError(w, 401, "M_UNKNOWN_TOKEN", "Unknown access token")
			return
		}
		route := routeOf(r)
		if s.injectFault(w, route) {
			return
		}
		if s.holdRequest(r, route) {
			hangUp(w)
			return
		}
		if s.takeLose(route) {
			// Apply the request, then hang up: the client cannot know it worked.
			next.ServeHTTP(discard{}, r.WithContext(withUser(r.Context(), user, tok)))
			hangUp(w)
			return
		}
		next.ServeHTTP(w, r.WithContext(withUser(r.Context(), user, tok)))
	})
}

// routeOf names a request by method and its path without ids, e.g.
// "PUT send", "GET sync": what faults and counters match on.
func routeOf(r *http.Request) string {
	p := strings.TrimPrefix(r.URL.Path, "/_matrix/")
	parts := strings.Split(p, "/")
	name := parts[len(parts)-1]
	for _, w := range []string{"send", "redact", "typing", "receipt", "join", "leave", "state", "event", "messages",
		"joined_members", "upload", "download", "sync", "whoami", "filter", "config"} {
		for _, part := range parts {
			if part == w {
				return r.Method + " " + w
			}
		}
	}
	return r.Method + " " + name
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"errcode": code, "error": msg})
}

// appendLocked adds e to the log and wakes waiting syncs; s.mu is held.
func (s *Server) appendLocked(e *Event) *Event {
	s.nextID++
	if e.ID == "" {
		e.ID = fmt.Sprintf("$ev%d", s.nextID)
	}
	e.Pos = len(s.log) + 1
	if e.TS == 0 {
		e.TS = 1_700_000_000_000 + int64(e.Pos)
	}
	s.log = append(s.log, e)
	s.byID[e.ID] = e
	if rm := s.rooms[e.Room]; rm != nil && e.StateKey != nil {
		rm.state[e.Type+"|"+*e.StateKey] = e
		if e.Type == "m.room.member" {
			if m, _ := e.Content["membership"].(string); m != "" {
				rm.members[*e.StateKey] = m
			}
		}
	}
	s.pokeLocked()
	return e
}

// pokeLocked wakes long-polls and WaitFor; s.mu is held.
func (s *Server) pokeLocked() {
	close(s.wake)
	s.wake = make(chan struct{})
}

type discard struct{}

func (discard) Header() http.Header         { return http.Header{} }
func (discard) Write(b []byte) (int, error) { return len(b), nil }
func (discard) WriteHeader(int)             {}

func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if c, _, err := hj.Hijack(); err == nil {
			_ = c.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}
