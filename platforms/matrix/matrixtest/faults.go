package matrixtest

import (
	"context"
	"net/http"
	"strconv"
	"time"
)

// Failure is an error answer the fake gives instead of handling a request.
type Failure struct {
	Status       int    // 429, 500, 502, ...
	Errcode      string // "M_LIMIT_EXCEEDED"; "" = "M_UNKNOWN"
	RetryAfterMS int    // put in the body as retry_after_ms when > 0
	Header       bool   // also (or only, with RetryAfterMS 0 and HeaderSeconds) send Retry-After
	HeaderSecs   int    // Retry-After value in seconds when Header is set
	Count        int    // how many requests fail; 0 = 1
}

type fault struct {
	route string
	f     Failure
	left  int
	until time.Time // a 429's retry-after: requests before it are early retries
}

// Fail answers the next f.Count requests of route ("PUT send", "GET sync",
// "PUT redact", "POST upload", ...) with f.
func (s *Server) Fail(route string, f Failure) {
	if f.Count <= 0 {
		f.Count = 1
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults = append(s.faults, &fault{route: route, f: f, left: f.Count})
}

// LoseAnswer makes the next n requests of route be applied and then
// answered by a dropped connection, as a crash or timeout after the
// homeserver stored the event.
func (s *Server) LoseAnswer(route string, n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lose[route] += n
}

// HoldSyncs makes the next n /sync requests hang until the client gives
// up on them (its deadline) or the server closes.
func (s *Server) HoldSyncs(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.holds += n
}

// EarlyRetries counts requests that arrived on a rate-limited route before
// the retry-after the fake announced had elapsed: a client honouring the
// server never makes one.
func (s *Server) EarlyRetries() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.early
}

// InjectNulls makes the next n non-empty /sync and /messages answers
// carry JSON nulls where a room or an event belongs, as a broken or
// hostile homeserver may send.
func (s *Server) InjectNulls(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.nulls += n
}

// takeNullsLocked reports whether this answer gets nulls.
func (s *Server) takeNullsLocked() bool {
	if s.nulls > 0 {
		s.nulls--
		return true
	}
	return false
}

// saltSync puts nulls into a /sync answer.
func saltSync(resp map[string]any) {
	rooms := resp["rooms"].(map[string]any)
	rooms["join"].(map[string]any)["!null:fake.test"] = nil
	rooms["invite"].(map[string]any)["!nullinvite:fake.test"] = nil
	for _, jr := range rooms["join"].(map[string]any) {
		jr, ok := jr.(map[string]any)
		if !ok {
			continue
		}
		tl := jr["timeline"].(map[string]any)
		tl["events"] = append([]map[string]any{nil}, tl["events"].([]map[string]any)...)
		st := jr["state"].(map[string]any)
		st["events"] = append(st["events"].([]map[string]any), nil)
	}
}

// UseLegacyMedia makes the fake serve downloads only on the legacy
// /_matrix/media/v3/download path and announce no authenticated media.
func (s *Server) UseLegacyMedia() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.legacy = true
}

func (s *Server) injectFault(w http.ResponseWriter, route string) bool {
	s.mu.Lock()
	s.requests[route]++
	s.pokeLocked() // WaitFor conditions may count requests
	now := time.Now()
	var hit *fault
	for _, f := range s.faults {
		if f.route != route {
			continue
		}
		if now.Before(f.until) {
			s.early++
		}
		if f.left > 0 && hit == nil {
			hit = f
		}
	}
	if hit == nil {
		s.mu.Unlock()
		return false
	}
	hit.left--
	wait := time.Duration(hit.f.RetryAfterMS) * time.Millisecond
	if hit.f.Header {
		wait = max(wait, time.Duration(hit.f.HeaderSecs)*time.Second)
	}
	// A little slack: the client's clock starts when it reads the answer.
	hit.until = now.Add(wait - 20*time.Millisecond)
	s.mu.Unlock()
	body := map[string]any{"errcode": hit.f.Errcode, "error": "injected failure"}
	if hit.f.Errcode == "" {
		body["errcode"] = "M_UNKNOWN"
	}
	if hit.f.RetryAfterMS > 0 {
		body["retry_after_ms"] = hit.f.RetryAfterMS
	}
	if hit.f.Header {
		w.Header().Set("Retry-After", strconv.Itoa(hit.f.HeaderSecs))
	}
	writeJSON(w, hit.f.Status, body)
	return true
}

func (s *Server) takeLose(route string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.lose[route] > 0 {
		s.lose[route]--
		return true
	}
	return false
}

// takeHold reports whether this sync must hang.
func (s *Server) takeHold() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.holds > 0 {
		s.holds--
		return true
	}
	return false
}

// Requests counts the requests the fake received on route.
func (s *Server) Requests(route string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[route]
}

// TxnReplays counts sends answered from the transaction map: a client
// retried a send the homeserver had already stored.
func (s *Server) TxnReplays() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.txnReplays
}

type userKey struct{}

type caller struct{ user, token string }

func withUser(ctx context.Context, user, token string) context.Context {
	return context.WithValue(ctx, userKey{}, caller{user, token})
}

func callerOf(r *http.Request) caller {
	c, _ := r.Context().Value(userKey{}).(caller)
	return c
}
