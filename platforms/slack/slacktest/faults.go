package slacktest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
)

// faults are the failures queued per method ("chat.postMessage", or
// "upload" and "download" for the file URLs).
type faults struct {
	mu      sync.Mutex
	limited map[string][]int // Retry-After seconds of each queued 429
	broken  map[string]int   // 5xx answers left
	lose    map[string]int   // handled but answered by a hang-up
	holds   map[string][]*Held
	held    []*Held
	seen429 map[string]int
}

func (f *faults) init() {
	f.limited = map[string][]int{}
	f.broken = map[string]int{}
	f.lose = map[string]int{}
	f.holds = map[string][]*Held{}
	f.seen429 = map[string]int{}
}

// Inject429 answers the next count calls of method with HTTP 429 and
// Retry-After: retryAfter (whole seconds: slack-go reads no fractions).
func (s *Server) Inject429(method string, retryAfter, count int) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	for i := 0; i < count; i++ {
		s.faults.limited[method] = append(s.faults.limited[method], retryAfter)
	}
}

// Inject5xx answers the next count calls of method with HTTP 503.
func (s *Server) Inject5xx(method string, count int) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.broken[method] += count
}

// RateLimited is how many 429s method answered.
func (s *Server) RateLimited(method string) int {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	return s.faults.seen429[method]
}

// LoseAnswer makes the next count calls of method be handled (a message
// is posted) but answered by a dropped connection: the client cannot know
// the outcome, as after a timeout.
func (s *Server) LoseAnswer(method string, count int) {
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.lose[method] += count
}

// Held is a request the fake holds before handling it (see HoldNext).
type Held struct {
	arrived, release chan struct{}
	once             sync.Once
	drop             bool
	contains         string
}

// Arrived is closed when the held request has reached the fake.
func (h *Held) Arrived() <-chan struct{} { return h.arrived }

// Release lets the held request be handled, even when its client has
// gone: it was on the wire, as it would be at Slack.
func (h *Held) Release() { h.once.Do(func() { close(h.release) }) }

// Drop discards the held request unhandled: the client sees the
// connection close, and nothing was posted.
func (h *Held) Drop() {
	h.once.Do(func() {
		h.drop = true
		close(h.release)
	})
}

// HoldNext holds the next call of method until Release or Drop.
func (s *Server) HoldNext(method string) *Held { return s.HoldMatching(method, "") }

// HoldMatching holds the next call of method whose body contains contains
// (a marker in one part of a split reply).
func (s *Server) HoldMatching(method, contains string) *Held {
	h := &Held{arrived: make(chan struct{}), release: make(chan struct{}), contains: contains}
	s.faults.mu.Lock()
	defer s.faults.mu.Unlock()
	s.faults.holds[method] = append(s.faults.holds[method], h)
	return h
}

func (f *faults) releaseAll() {
	f.mu.Lock()
	held := append([]*Held(nil), f.held...)
	for _, q := range f.holds {
		held = append(held, q...)
	}
	f.mu.Unlock()
	for _, h := range held {
		h.Release()
	}
}

// apply runs the faults queued for method on r. It returns the writer to
// answer with, a function to run after answering, and false when the
// request was answered (429, 5xx) or dropped and must not be handled.
func (s *Server) apply(w http.ResponseWriter, r *http.Request, method string) (http.ResponseWriter, func(), bool) {
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	f := &s.faults
	f.mu.Lock()
	h := f.takeHoldLocked(method, body)
	f.mu.Unlock()
	if h != nil && !h.wait() {
		hangUp(w)
		return w, nil, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if q := f.limited[method]; len(q) > 0 {
		f.limited[method] = q[1:]
		f.seen429[method]++
		w.Header().Set("Retry-After", strconv.Itoa(q[0]))
		http.Error(w, "rate limited", http.StatusTooManyRequests)
		return w, nil, false
	}
	if f.broken[method] > 0 {
		f.broken[method]--
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return w, nil, false
	}
	if f.lose[method] > 0 {
		f.lose[method]--
		return httptest.NewRecorder(), func() { hangUp(w) }, true
	}
	return w, func() {}, true
}

func (f *faults) takeHoldLocked(method string, body []byte) *Held {
	// Form bodies are URL-encoded; match the marker as written too.
	decoded, _ := url.QueryUnescape(string(body))
	for i, h := range f.holds[method] {
		if h.contains == "" || bytes.Contains(body, []byte(h.contains)) || strings.Contains(decoded, h.contains) {
			q := f.holds[method]
			f.holds[method] = append(q[:i:i], q[i+1:]...)
			f.held = append(f.held, h)
			return h
		}
	}
	return nil
}

// wait blocks until the hold is released; false when it was dropped.
func (h *Held) wait() bool {
	close(h.arrived)
	<-h.release
	return !h.drop
}

// hangUp closes the request's connection without an answer.
func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
		}
	}
}
