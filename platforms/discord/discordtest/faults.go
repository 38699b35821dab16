package discordtest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
)

// Held is a request the fake holds before handling it (see HoldNext).
type Held struct {
	arrived    chan struct{}
	release    chan struct{}
	clientGone chan struct{}
	once       sync.Once
	drop       bool   // set by Drop before release closes
	contains   string // HoldMatching: the body must contain it
}

// Arrived is closed when the held request has reached the fake.
func (h *Held) Arrived() <-chan struct{} { return h.arrived }

// ClientGone is closed if the client gave up on the request (its context
// ended or it hung up) while it was held.
func (h *Held) ClientGone() <-chan struct{} { return h.clientGone }

// Release lets the held request be handled. Like Discord, the fake
// handles it even when the client has gone: the request was on the wire.
func (h *Held) Release() { h.once.Do(func() { close(h.release) }) }

// Drop discards the held request unhandled, as if the connection died
// before it reached Discord: nothing is created, and the client (if still
// there) sees the connection close.
func (h *Held) Drop() {
	h.once.Do(func() {
		h.drop = true
		close(h.release)
	})
}

// HoldNext holds the next request to method+path (path after /api/v9/)
// until Release. The server's Close releases it too.
func (s *Server) HoldNext(method, path string) *Held {
	return s.HoldMatching(method, path, "")
}

// HoldMatching is HoldNext for the next such request whose body contains
// contains (e.g. a marker in one part of a split message).
func (s *Server) HoldMatching(method, path, contains string) *Held {
	h := &Held{arrived: make(chan struct{}), release: make(chan struct{}), clientGone: make(chan struct{}),
		contains: contains}
	s.mu.Lock()
	defer s.mu.Unlock()
	key := method + " " + path
	s.holds[key] = append(s.holds[key], h)
	return h
}

// takeHold removes and returns the first hold queued for key that matches
// the request's body; s.mu must be held.
func (s *Server) takeHoldLocked(key string, body []byte) *Held {
	for i, h := range s.holds[key] {
		if h.contains == "" || bytes.Contains(body, []byte(h.contains)) {
			q := s.holds[key]
			s.holds[key] = append(q[:i:i], q[i+1:]...)
			s.held = append(s.held, h)
			return h
		}
	}
	return nil
}

// LoseAnswer makes the next count requests to method+path be handled (a
// message is created) but answered by a dropped connection: the client
// cannot know the outcome, as after a timeout.
func (s *Server) LoseAnswer(method, path string, count int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lose[method+" "+path] += count
}

// Delete removes a message, as a user or moderator deleting it; editing
// it afterwards answers 404 Unknown Message.
func (s *Server) Delete(channelID, messageID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	msgs := s.history[channelID]
	for i, m := range msgs {
		if m.ID == messageID {
			s.history[channelID] = append(msgs[:i:i], msgs[i+1:]...)
			delete(s.components, channelID+"/"+messageID)
			return
		}
	}
}

// faults applies a queued hold or lost answer to the request. It returns
// the writer to handle the request with, a function to call after it, and
// false when the request was dropped and must not be handled.
func (s *Server) faults(w http.ResponseWriter, r *http.Request, path string) (http.ResponseWriter, func(), bool) {
	key := r.Method + " " + path
	body, _ := io.ReadAll(r.Body)
	r.Body = io.NopCloser(bytes.NewReader(body))
	s.mu.Lock()
	h := s.takeHoldLocked(key, body)
	lose := s.lose[key] > 0
	if lose {
		s.lose[key]--
	}
	s.mu.Unlock()
	if h != nil {
		close(h.arrived)
		select {
		case <-h.release:
		case <-r.Context().Done():
			close(h.clientGone)
			<-h.release
		}
		if h.drop {
			hangUp(w)
			return w, func() {}, false
		}
	}
	if !lose {
		return w, func() {}, true
	}
	return httptest.NewRecorder(), func() { hangUp(w) }, true
}

// hangUp closes the request's connection without an answer.
func hangUp(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
		}
	}
}
